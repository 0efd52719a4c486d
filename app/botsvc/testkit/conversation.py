"""What an exported conversation (exportChat's pytest module) calls: a
simulated user who replays the steps and checks, reaction by reaction, what
the bot did, read from the bot's call log; and the same steps from a
transcript's data. Long because the module's helpers and the replay from
data share one set of rules, kept in one place.

    user = conversation(botsvc, botsvc_bot, timeout=TIMEOUT)
    user.start("promo")
    user.expect_message("Welcome!", keyboard=[[{"text": "Yes", "callback_data": "yes"}]])
    user.click(bot_message(1), "yes")
    user.expect_edit(bot_message(1), "You said yes")
    user.expect_answer("Saved")
    user.done()

Messages are named by their place: ``bot_message(2)`` is the second message
the bot sent in this test, ``user_message(1)`` the user's first text or
file. A reaction that differs, or one that never comes within the timeout,
fails the test naming the step, with what was expected beside what the bot
did; an action the service refuses fails naming its step too.

The same steps run from data (a ``botsvc-transcript/1`` file's steps):
``run_steps``, which ``botsvc.testkit.transcript.replay`` (``botsvc
run-transcript``) calls.
"""
from __future__ import annotations

import base64
import contextlib
import functools
import os
import tempfile
import time
from dataclasses import dataclass
from typing import Any

from botsvc.domain.conversation_steps import SHOWN_FIELDS, chat_of, params_of, result_of
from botsvc.testkit.client import BotsvcError
from botsvc.testkit.harness import DEFAULT_WAIT_SECONDS, Botsvc, TestBot
from botsvc.testkit.waits import waited

# How long skip_reactions() (with no count) lets the bot answer a Start
# nobody checks.
SETTLE_SECONDS = 1.0


@functools.cache
def reaction_kinds() -> dict[str, str]:
    """``{method: "send" | "edit" | "delete" | "answer"}``: the catalogue's
    (loaded once, when a conversation first reads the bot's calls)."""
    import botsvc.api  # noqa: F401  (registers the /v2 methods)
    from botsvc.api.registry import reaction_methods  # lazy: loads the /v2 catalogue
    return reaction_methods()


@dataclass(frozen=True)
class Place:
    """A message by its place in the conversation."""
    side: str    # "bot" or "user"
    index: int   # 1 for the first

    def __repr__(self) -> str:
        return f"{self.side}_message({self.index})"


def bot_message(index: int) -> Place:
    """The bot's ``index``-th message in this conversation (1 for the first)."""
    return Place("bot", index)


def user_message(index: int) -> Place:
    """The user's ``index``-th text or file in this conversation."""
    return Place("user", index)


def conversation(botsvc: Botsvc, bot: TestBot, *,
                 timeout: float = DEFAULT_WAIT_SECONDS) -> ConversationUser:
    """A new simulated user of ``bot``, made as the plugin makes users (a
    failing test's report shows its chat), ready to replay a conversation."""
    return ConversationUser(botsvc, bot, botsvc.new_user(bot).user_id, timeout)


class ConversationUser:
    def __init__(self, botsvc: Botsvc, bot: TestBot, user_id: int, timeout: float):
        self.operator, self.bot, self.user_id, self.timeout = (botsvc.operator, bot, user_id,
                                                               timeout)
        self.chat_id: str | None = None
        self.ids: dict[str, list[int]] = {"bot": [], "user": []}
        self.places: dict[int, Place] = {}
        self.clicks: set[str] = set()
        self.number, self.step, self.expected_in_step = 0, "(before the first step)", 0
        self.pending: list[dict] = []   # reactions read, not yet expected
        self.last_call_id = max((c["call_id"] for c in self._newest_calls()), default=0)

    # -- the user's actions ----------------------------------------------------
    def start(self, start_parameter: str | None = None) -> None:
        self._begin(f"user.start({_args(start_parameter)})")
        with self._refused():
            self.chat_id = self.operator.user_start(self.user_id, self.bot.id,
                                                    start_parameter)["chat_id"]

    def stop(self) -> None:
        self._begin("user.stop()")
        with self._refused():
            self.operator.user_stop(self.user_id, self.bot.id)

    def block(self) -> None:
        self._begin("user.block()")
        with self._refused():
            self.operator.user_block(self.user_id, self.bot.id)

    def say(self, text: str, reply_to: Place | None = None) -> None:
        self._begin(f"user.say({_args(text, reply_to)})")
        with self._refused():
            sent = self.operator.user_send_message(self.user_id, self.bot.id, text,
                                                   self._id_of(reply_to))
        self._name(sent["message_id"], "user")

    def click(self, message: Place, callback_data: str) -> None:
        self._begin(f"user.click({message!r}, {callback_data!r})")
        with self._refused():
            self.clicks.add(self.operator.user_click_button(
                self.user_id, self.bot.id, self._id_of(message), callback_data))

    def send_file(self, content_base64: str, file_name: str, *, type: str | None = None,
                  caption: str | None = None, reply_to: Place | None = None) -> None:
        self._begin(f"user.send_file(<{file_name!r}>, type={type!r})")
        if reply_to is not None:
            raise AssertionError(f"{self.step}: a file cannot be sent as a reply")
        with tempfile.TemporaryDirectory() as tmp:
            path = os.path.join(tmp, _safe_name(file_name))
            with open(path, "wb") as f:
                f.write(base64.b64decode(content_base64))
            with self._refused():
                sent = self.operator.user_send_media(self.user_id, self.bot.id, path, caption,
                                                     type)
        self._name(sent["message_id"], "user")

    # -- what the bot is expected to do ------------------------------------------
    def expect_message(self, text: str | None = None, *, type: str = "text", **shown: Any) -> None:
        __tracebackhide__ = True   # the failure points at the step in the test
        expected = {"did": "sent a message", **_shown(text, type, shown)}
        self._compare(expected, self._next(expected))

    def expect_edit(self, message: Place, text: str | None = None, *, type: str = "text",
                    **shown: Any) -> None:
        __tracebackhide__ = True   # the failure points at the step in the test
        expected = {"did": "edited a message", "message": message, **_shown(text, type, shown)}
        self._compare(expected, self._next(expected))

    def expect_deleted(self, message: Place) -> None:
        __tracebackhide__ = True   # the failure points at the step in the test
        expected = {"did": "deleted a message", "message": message}
        self._compare(expected, self._next(expected))

    def expect_answer(self, text: str | None = None, *, show_alert: bool = False) -> None:
        __tracebackhide__ = True   # the failure points at the step in the test
        expected = {"did": "answered a click", "text": text, "show_alert": show_alert}
        self._compare(expected, self._next(expected))

    def skip_reactions(self, count: int | None = None) -> None:
        """The bot's next ``count`` reactions, awaited (each within the
        timeout) and numbered, not checked: a lead-in's. With no count, let
        the bot answer for a moment and take none of it as the test's."""
        __tracebackhide__ = True   # the failure points at the step in the test
        if count is None:
            time.sleep(SETTLE_SECONDS)
            self._read()
            self.pending.clear()
            return
        for _ in range(count):
            self._next({"did": "reacted (a lead-in's reaction, not checked)"})

    def done(self) -> None:
        """The end: the bot did nothing the conversation did not expect."""
        self._begin("the end of the conversation")

    # -- inside ------------------------------------------------------------------
    def _begin(self, step: str) -> None:
        __tracebackhide__ = True   # the failure points at the step in the test
        self._read()
        self._check_bot_running(f"before {step}")
        if self.pending:
            raise AssertionError(
                f"{self.step}: the bot did more than expected before {step}:\n"
                + "\n".join(f"  also: {_describe(r)}" for r in self.pending))
        self.number += 1
        self.step, self.expected_in_step = f"step {self.number} ({step})", 0

    @contextlib.contextmanager
    def _refused(self):
        """An action the service refuses fails its step, saying why."""
        try:
            yield
        except BotsvcError as error:
            raise AssertionError(f"{self.step}: the service refused it: {error.error_code}:"
                                 f" {error.description}") from None

    def _id_of(self, place: Place | None) -> int | None:
        __tracebackhide__ = True   # the failure points at the step in the test
        if place is None:
            return None
        ids = self.ids[place.side]
        if not 1 <= place.index <= len(ids):
            raise AssertionError(f"{self.step}: {place!r} does not exist: the {place.side} has"
                                 f" sent {len(ids)} message(s) so far")
        return ids[place.index - 1]

    def _name(self, message_id: int, side: str) -> Place:
        self.ids[side].append(message_id)
        self.places[message_id] = Place(side, len(self.ids[side]))
        return self.places[message_id]

    def _next(self, expected: dict) -> dict:
        __tracebackhide__ = True   # the failure points at the step in the test
        self.expected_in_step += 1
        if not self.pending:   # each read waits on the server for the bot's next call
            for _ in waited(self._read, bool, self.timeout, self.bot.read_seconds()):
                if self.pending:
                    break
                self._check_bot_running(f"reaction {self.expected_in_step}")
        if not self.pending:
            raise AssertionError(
                f"{self.step}, reaction {self.expected_in_step}:\n"
                f"  expected: {_describe(expected)}\n"
                f"  actual:   nothing within {self.timeout:g} s")
        return self.pending.pop(0)

    def _compare(self, expected: dict, actual: dict) -> None:
        __tracebackhide__ = True   # the failure points at the step in the test
        if expected != actual:
            raise AssertionError(f"{self.step}, reaction {self.expected_in_step}:\n"
                                 f"  expected: {_describe(expected)}\n"
                                 f"  actual:   {_describe(actual)}")

    def _check_bot_running(self, where: str) -> None:
        """A bot process that exited fails the step at once (see TestBot.check_running)."""
        __tracebackhide__ = True   # the failure points at the step in the test
        try:
            self.bot.check_running()
        except AssertionError as gone:
            raise AssertionError(f"{self.step}, {where}: {gone}") from None

    def _newest_calls(self) -> list[dict]:
        return self.operator.call("getBotCalls", bot_id=self.bot.id, limit=100)["calls"]

    def _read(self, wait_ms: int = 0) -> int:
        """The bot's new calls, oldest first, with their detail (a re-send's
        mark, a message kept whole), into ``pending`` as reactions; how many
        were read. ``wait_ms``: the server waits that long for one. The one
        read of the call log after the first."""
        fresh = self.operator.calls_after(self.bot.id, self.last_call_id, detail=True,
                                          wait_ms=wait_ms)
        for call in fresh:
            self.last_call_id = call["call_id"]
            self.pending += self._reactions(call)
        return len(fresh)

    def _reactions(self, call: dict) -> list[dict]:
        kind = reaction_kinds().get(call["method"])
        if kind is None or not call["ok"] or call["replayed"] or "resent_from" in call:
            return []
        params, result = params_of(call), result_of(call)
        if kind == "answer":
            if params.get("callback_query_id") not in self.clicks:
                return []
            return [{"did": "answered a click", "text": params.get("text"),
                     "show_alert": params.get("show_alert") in (True, "true", "1")}]
        if chat_of(call) != str(self.chat_id):
            return []
        if kind == "send":
            sent = result if isinstance(result, list) else [result]
            for message in sent:
                self._name(message["message_id"], "bot")
            return [{"did": "sent a message", **{k: m[k] for k in SHOWN_FIELDS if k in m}}
                    for m in sent]
        if kind == "delete":
            ids = params.get("message_ids") or [params.get("message_id")]
            return [{"did": "deleted a message", "message": self._place(i)}
                    for i in (ids if isinstance(ids, list) else [ids])]
        shown = {k: result[k] for k in SHOWN_FIELDS if isinstance(result, dict) and k in result}
        message_id = result.get("message_id") if isinstance(result, dict) else None
        return [{"did": "edited a message", "message": self._place(message_id), **shown}]

    def _place(self, message_id: Any) -> Place | str:
        try:
            return self.places.get(int(message_id), f"message {message_id} (not of this test)")
        except (TypeError, ValueError):
            return f"message {message_id!r}"


# -- a transcript's steps, from data -----------------------------------------------

def run_steps(user: ConversationUser, steps: list[dict]) -> None:
    """Replay a ``botsvc-transcript/1`` file's ``steps`` with ``user``, as the
    exported module does: each action, then each reaction expected (a
    lead-in's awaited, not checked); then ``done()``. Fails with the same
    AssertionError as the module (``step N (...)``, expected beside actual)."""
    __tracebackhide__ = True
    if steps and steps[0]["user"]["action"] != "start":
        user.start()
        user.skip_reactions()
    for step in steps:
        _act(user, step["user"])
        if step.get("lead_in"):
            user.skip_reactions(len(step["bot"]))
            continue
        for reaction in step["bot"]:
            _expect(user, reaction)
    user.done()


def _place_of(place: dict | None) -> Place | None:
    return None if place is None else Place(place["from"], int(place["index"]))


def _act(user: ConversationUser, action: dict) -> None:
    kind = action["action"]
    if kind == "start":
        user.start(action.get("start_parameter"))
    elif kind in ("stop", "block"):
        getattr(user, kind)()
    elif kind == "say":
        user.say(action["text"], reply_to=_place_of(action.get("reply_to")))
    elif kind == "click":
        user.click(_place_of(action["message"]), action["callback_data"])
    elif kind == "send_file":
        user.send_file(action["content_base64"], action["file_name"], type=action.get("type"),
                       caption=action.get("caption"), reply_to=_place_of(action.get("reply_to")))
    else:
        raise ValueError(f"unknown action: {kind!r}")


def _expect(user: ConversationUser, reaction: dict) -> None:
    __tracebackhide__ = True
    kind = reaction["reaction"]
    shown = {k: reaction[k] for k in SHOWN_FIELDS if k in reaction and k != "text"}
    if kind == "message":
        user.expect_message(reaction.get("text"), **shown)
    elif kind == "edit":
        user.expect_edit(_place_of(reaction["message"]), reaction.get("text"), **shown)
    elif kind == "delete":
        user.expect_deleted(_place_of(reaction["message"]))
    elif kind == "answer":
        user.expect_answer(reaction.get("text"), show_alert=reaction.get("show_alert", False))
    else:
        raise ValueError(f"unknown reaction: {kind!r}")


def _shown(text: str | None, type: str, shown: dict[str, Any]) -> dict:
    """An expectation's fields, named as a Message names them."""
    fields: dict[str, Any] = {"type": type}
    if text is not None:
        fields["text"] = text
    keyboard = shown.pop("keyboard", None)
    if keyboard is not None:
        shown["reply_markup"] = {"inline_keyboard": keyboard}
    fields.update({k: v for k, v in shown.items() if v is not None})
    unknown = set(fields) - set(SHOWN_FIELDS)
    if unknown:
        raise TypeError(f"unknown fields of a message: {sorted(unknown)}")
    return fields


def _safe_name(file_name: str) -> str:
    """The file's name as a name in a folder of its own: no path, no NUL."""
    name = os.path.basename(file_name.replace("\\", "/")).replace("\0", "")
    return name if name not in ("", ".", "..") else "file"


def _describe(reaction: dict) -> str:
    fields = ", ".join(f"{k}={v!r}" for k, v in reaction.items() if k != "did")
    return f"the bot {reaction['did']}" + (f": {fields}" if fields else "")


def _args(*values: Any) -> str:
    return ", ".join(repr(v) for v in values if v is not None)
