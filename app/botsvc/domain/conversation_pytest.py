"""A conversation (``conversation.export_chat``'s transcript) written as a
pytest module for the botsvc plugin: one test function a person would keep,
each user action on a line, each reaction of the bot on a line after it.
The helpers it calls ship in the plugin (``botsvc.testkit.conversation``),
so the module holds only the conversation, and any file the user sent as
base64 (the one blob).

Nothing a chat said ever becomes code. Every text, caption, callback_data,
label and file name is written by ``repr`` (a Python string literal, or a
display of them), a place by its own type (``Place``: a side and a number,
written ``bot_message(2)``), and a comment never holds a chat's text. Then
the module is parsed and its syntax tree checked
(``conversation_check.check_module``): only the helpers' calls with literal
arguments, or the export is refused.
"""
from __future__ import annotations

import pprint
import re
from dataclasses import dataclass

from botsvc.domain.conversation_check import BASE64, HELPERS_MODULE, check_module

TIMEOUT_SECONDS = 10
LINE = 96
# base64 split into lines of this many characters.
BLOB_LINE = 76


@dataclass(frozen=True)
class Place:
    """A message by its place: the transcript's ``{"from", "index"}``, read
    as a side of two and a positive number, or refused."""
    side: str
    index: int

    @classmethod
    def of(cls, place: dict) -> Place:
        side, index = place["from"], place["index"]
        if side not in ("bot", "user") or type(index) is not int or index < 1:
            raise ValueError(f"not a place: {place!r}")
        return cls(side, index)

    def code(self) -> str:
        return f"{self.side}_message({self.index})"


def render(transcript: dict) -> str:
    """The module's text; checked before it is handed out."""
    blobs: list[str] = []
    body: list[str] = []
    steps = transcript["steps"]
    if steps and steps[0]["user"]["action"] != "start":
        body += ["    # The export begins after the chat's Start: Start first; what the bot",
                 "    # answers is not part of the test.", "    user.start()",
                 "    user.skip_reactions()", ""]
    for step in steps:
        if step.get("lead_in") and not body:
            body += ["    # Lead-in: the chat from its Start up to the chosen message, replayed so",
                     "    # the bot is where it was then; its reactions are awaited and take",
                     "    # their places, but are not checked.", ""]
        body += _action(step["user"], blobs)
        if step.get("lead_in"):
            body.append(f"    user.skip_reactions({len(step['bot'])})")
        else:
            body += [f"    {_reaction(r)}" for r in step["bot"]]
        body.append("")
    body.append("    user.done()   # and the bot did nothing more")
    module = "\n".join([*_head(transcript), *blobs, "", "",
                        "def test_conversation(bot_under_test, botsvc, botsvc_bot):",
                        "    user = conversation(botsvc, botsvc_bot, timeout=TIMEOUT)", "",
                        *body]) + "\n"
    check_module(module)
    return module


def file_name(bot_username: str) -> str:
    return f"test_{re.sub(r'[^a-z0-9_]', '_', bot_username.lower())}_conversation.py"


def _comment_lines(text: str) -> list[str]:
    """A sentence as comment lines: every line break Python's or a reader's
    (CR, LF, U+2028...) starts a new ``#`` line."""
    return ["# " + line for line in text.splitlines()] or ["#"]


def _head(transcript: dict) -> list[str]:
    bot = re.sub(r"[^A-Za-z0-9_]", "_", str(transcript["bot"]))
    lines = [f'"""A conversation with @{bot}, exported from botsvc as a test.', "",
             "Runs on the botsvc pytest plugin against a fresh installation. Define the",
             "fixture ``bot_under_test`` in conftest.py: it runs your bot against",
             "``botsvc_bot`` (its ``base_url`` and ``token``). Each step is what the user",
             "did, then each thing the bot is expected to do, in order; messages are",
             "named by their place (``bot_message(2)``: the bot's second message).",
             '"""']
    for note in transcript["notes"]:
        lines += _comment_lines("Note: " + note)
    lines += [f"from {HELPERS_MODULE} import bot_message, conversation,"
              " user_message  # noqa: F401", "",
              f"TIMEOUT = {TIMEOUT_SECONDS}  # seconds to wait for each of the bot's reactions"]
    return lines


def _literal(value: object, width: int = LINE - 12) -> str:
    """Python source for a value: a place as its call, anything else (texts,
    keyboards, cards) as literals."""
    if isinstance(value, (Place, BlobName)):
        return value.code()
    return pprint.pformat(value, width=width, sort_dicts=False)


def _call(name: str, args: list[object], kwargs: dict[str, object]) -> str:
    """``name(args..., key=value...)``, each a value written by ``_literal``,
    wrapped when long."""
    # A wrapped argument starts 8 columns in: its value fits what is left.
    parts = [*(_literal(a) for a in args),
             *(f"{k}=" + _literal(v, LINE - 9 - len(k)).replace("\n", "\n" + " " * (len(k) + 1))
               for k, v in kwargs.items() if v is not None)]
    line = f"{name}({', '.join(parts)})"
    if len(line) + 4 <= LINE:
        return line
    inner = ",\n        ".join(p.replace("\n", "\n        ") for p in parts)
    return f"{name}(\n        {inner})"


def _action(action: dict, blobs: list[str]) -> list[str]:
    kind = action["action"]
    reply = {"reply_to": Place.of(action["reply_to"])} if "reply_to" in action else {}
    if kind == "start":
        args = [action["start_parameter"]] if "start_parameter" in action else []
        return [f"    user.{_call('start', args, {})}"]
    if kind in ("stop", "block"):
        return [f"    user.{kind}()"]
    if kind == "say":
        return [f"    user.{_call('say', [action['text']], reply)}"]
    if kind == "click":
        return [f"    user.{_call('click', [Place.of(action['message']), action['callback_data']], {})}"]
    return [f"    user.{_call('send_file', [_blob(action, blobs), action['file_name']], {'type': action['type'], 'caption': action.get('caption'), **reply})}"]


@dataclass(frozen=True)
class BlobName:
    """The name of a file's base64 this module defined itself (``PHOTO_1``)."""
    name: str

    def code(self) -> str:
        return self.name


def _blob(action: dict, blobs: list[str]) -> BlobName:
    kind = re.sub(r"[^A-Z]", "_", str(action["type"]).upper())
    name = f"{kind}_{len(blobs) // 3 + 1}"   # three lines a file
    data = action["content_base64"]
    if not BASE64.match(data):
        raise ValueError("a file's content is not base64")
    blobs += ["", f"{name} = (   # a file the user sent, as they sent it (base64)",
              "\n".join(f'    "{data[i:i + BLOB_LINE]}"' for i in range(0, len(data), BLOB_LINE))
              + ")"]
    return BlobName(name)


def _shown(reaction: dict) -> tuple[list[object], dict]:
    """The positional text and the keyword fields of what the user sees."""
    args = [reaction["text"]] if "text" in reaction else []
    kwargs: dict = {}
    if reaction.get("type", "text") != "text":
        kwargs["type"] = reaction["type"]
    for key in ("caption", "card"):
        if key in reaction:
            kwargs[key] = reaction[key]
    markup = reaction.get("reply_markup")
    if markup is not None and set(markup) == {"inline_keyboard"}:
        kwargs["keyboard"] = markup["inline_keyboard"]
    elif markup is not None:
        kwargs["reply_markup"] = markup
    return args, kwargs


def _reaction(reaction: dict) -> str:
    kind = reaction["reaction"]
    if kind == "message":
        args, kwargs = _shown(reaction)
        return "user." + _call("expect_message", args, kwargs)
    if kind == "edit":
        args, kwargs = _shown(reaction)
        return "user." + _call("expect_edit", [Place.of(reaction["message"]), *args], kwargs)
    if kind == "delete":
        return "user." + _call("expect_deleted", [Place.of(reaction["message"])], {})
    args = [reaction["text"]] if reaction.get("text") is not None else []
    return "user." + _call("expect_answer", args,
                           {"show_alert": True} if reaction["show_alert"] else {})
