"""A conversation (``conversation.export_chat``'s transcript) written as a
pytest module for the botsvc plugin: one test function a person would keep,
each user action on a line, each reaction of the bot on a line after it.
The helpers it calls ship in the plugin (``botsvc.testkit.conversation``),
so the module holds only the conversation, and any file the user sent as
base64 (the one blob).
"""
from __future__ import annotations

import pprint
import re

TIMEOUT_SECONDS = 10
LINE = 96
# base64 split into lines of this many characters.
BLOB_LINE = 76


def render(transcript: dict) -> str:
    blobs: list[str] = []
    body: list[str] = []
    steps = transcript["steps"]
    if steps and steps[0]["user"]["action"] != "start":
        body += ["    # The export begins mid-chat: Start first; what the bot answers is not",
                 "    # part of the test.", "    user.start()", "    user.skip_reactions()", ""]
    for step in steps:
        body += _action(step["user"], blobs)
        body += [f"    {_reaction(r)}" for r in step["bot"]]
        body.append("")
    body.append("    user.done()   # and the bot did nothing more")
    return "\n".join([*_head(transcript), *blobs, "", "", _test_name(transcript),
                      "    user = conversation(botsvc, botsvc_bot, timeout=TIMEOUT)", "",
                      *body]) + "\n"


def file_name(bot_username: str) -> str:
    return f"test_{re.sub(r'[^a-z0-9_]', '_', bot_username.lower())}_conversation.py"


def _head(transcript: dict) -> list[str]:
    lines = ['"""A conversation with @{}, exported from botsvc as a test.'.format(
                 transcript["bot"]), "",
             "Runs on the botsvc pytest plugin against a fresh installation. Define the",
             "fixture ``bot_under_test`` in conftest.py: it runs your bot against",
             "``botsvc_bot`` (its ``base_url`` and ``token``). Each step is what the user",
             "did, then each thing the bot is expected to do, in order; messages are",
             "named by their place (``bot_message(2)``: the bot's second message).",
             '"""']
    if transcript["notes"]:
        lines += ["# Note: " + n for n in transcript["notes"]]
    lines += ["from botsvc.testkit.conversation import bot_message, conversation,"
              " user_message  # noqa: F401", "",
              f"TIMEOUT = {TIMEOUT_SECONDS}  # seconds to wait for each of the bot's reactions"]
    return lines


def _test_name(transcript: dict) -> str:
    return "def test_conversation(bot_under_test, botsvc, botsvc_bot):"


def _place(place: dict) -> str:
    return f"{place['from']}_message({place['index']})"


def _call(name: str, args: list[str], kwargs: dict[str, object]) -> str:
    """``name(args..., key=value...)``, Python literals, wrapped when long."""
    # A wrapped argument starts 8 columns in: its value fits what is left.
    parts = [*args, *(f"{k}=" + _literal(v, LINE - 9 - len(k)).replace("\n", "\n" + " " * (len(k) + 1))
                      for k, v in kwargs.items() if v is not None)]
    line = f"{name}({', '.join(parts)})"
    if len(line) + 4 <= LINE:
        return line
    inner = ",\n        ".join(p.replace("\n", "\n        ") for p in parts)
    return f"{name}(\n        {inner})"


def _literal(value: object, width: int = LINE - 12) -> str:
    if isinstance(value, str) and value.startswith("\0place:"):
        return value[len("\0place:"):]
    return pprint.pformat(value, width=width, sort_dicts=False)


def _action(action: dict, blobs: list[str]) -> list[str]:
    kind = action["action"]
    reply = {"reply_to": "\0place:" + _place(action["reply_to"])} if "reply_to" in action else {}
    if kind == "start":
        args = [_literal(action["start_parameter"])] if "start_parameter" in action else []
        return [f"    user.{_call('start', args, {})}"]
    if kind in ("stop", "block"):
        return [f"    user.{kind}()"]
    if kind == "say":
        return [f"    user.{_call('say', [_literal(action['text'])], reply)}"]
    if kind == "click":
        return [f"    user.{_call('click', [_place(action['message']), _literal(action['callback_data'])], {})}"]
    name = f"{action['type'].upper()}_{len(blobs) // 3 + 1}"   # three lines a file
    data = action["content_base64"]
    blobs += ["", f"{name} = (   # {action['file_name']}, as the user sent it (base64)",
              "\n".join(f'    "{data[i:i + BLOB_LINE]}"' for i in range(0, len(data), BLOB_LINE))
              + ")"]
    kwargs = {"type": action["type"], "caption": action.get("caption"), **reply}
    return [f"    user.{_call('send_file', [name, _literal(action['file_name'])], kwargs)}"]


def _shown(reaction: dict) -> tuple[list[str], dict]:
    """The positional text and the keyword fields of what the user sees."""
    args = [_literal(reaction["text"])] if "text" in reaction else []
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
        return "user." + _call("expect_edit", [_place(reaction["message"]), *args], kwargs)
    if kind == "delete":
        return f"user.expect_deleted({_place(reaction['message'])})"
    args = [_literal(reaction["text"])] if reaction.get("text") is not None else []
    return "user." + _call("expect_answer", args,
                           {"show_alert": True} if reaction["show_alert"] else {})
