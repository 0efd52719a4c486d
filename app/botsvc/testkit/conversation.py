"""What an exported conversation (exportChat's pytest module) calls: a
simulated user who replays the steps and checks, reaction by reaction, what
the bot did, read from the bot's call log.

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
did.
"""
from __future__ import annotations

import base64
import json
import os
import tempfile
import time
from dataclasses import dataclass
from typing import Any

from botsvc.domain.conversation import (
    DELETE_METHODS,
    EDIT_METHODS,
    REACTION_METHODS,
    SEND_METHODS,
    SHOWN_FIELDS,
)
from botsvc.testkit.harness import DEFAULT_WAIT_SECONDS, Botsvc, TestBot
from botsvc.testkit.waits import waited

# How long skip_reactions lets the bot answer a Start nobody checks.
SETTLE_SECONDS = 1.0


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
    """A new simulated user of ``bot``, ready to replay a conversation."""
    return ConversationUser(botsvc, bot, botsvc.operator.create_user(), timeout)


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
        self.chat_id = self.operator.user_start(self.user_id, self.bot.id,
                                                start_parameter)["chat_id"]

    def stop(self) -> None:
        self._begin("user.stop()")
        self.operator.user_stop(self.user_id, self.bot.id)

    def block(self) -> None:
        self._begin("user.block()")
        self.operator.user_block(self.user_id, self.bot.id)

    def say(self, text: str, reply_to: Place | None = None) -> None:
        self._begin(f"user.say({_args(text, reply_to)})")
        sent = self.operator.user_send_message(self.user_id, self.bot.id, text,
                                               self._id_of(reply_to))
        self._name(sent["message_id"], "user")

    def click(self, message: Place, callback_data: str) -> None:
        self._begin(f"user.click({message!r}, {callback_data!r})")
        self.clicks.add(self.operator.user_click_button(
            self.user_id, self.bot.id, self._id_of(message), callback_data))

    def send_file(self, content_base64: str, file_name: str, *, type: str | None = None,
                  caption: str | None = None, reply_to: Place | None = None) -> None:
        self._begin(f"user.send_file(<{file_name}>, type={type!r})")
        if reply_to is not None:
            raise AssertionError(f"{self.step}: a file cannot be sent as a reply")
        with tempfile.TemporaryDirectory() as tmp:
            path = os.path.join(tmp, os.path.basename(file_name) or "file")
            with open(path, "wb") as f:
                f.write(base64.b64decode(content_base64))
            sent = self.operator.user_send_media(self.user_id, self.bot.id, path, caption, type)
        self._name(sent["message_id"], "user")

    # -- what the bot is expected to do ------------------------------------------
    def expect_message(self, text: str | None = None, *, type: str = "text", **shown: Any) -> None:
        __tracebackhide__ = True   # the failure points at the step in the test
        expected = {"did": "sent a message", **_shown(text, type, shown)}
        actual = self._next(expected)
        self._compare(expected, actual)

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

    def skip_reactions(self) -> None:
        """Let the bot answer for a moment; none of it is checked."""
        time.sleep(SETTLE_SECONDS)
        self._read()
        self.pending.clear()

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
        return self.operator.get_bot_calls(self.bot.id, limit=100)["calls"]

    def _read(self, wait_ms: int = 0) -> int:
        """The bot's new calls, oldest first, into ``pending`` as reactions;
        how many were read. ``wait_ms``: the server waits that long for one."""
        fresh = self.operator.calls_after(self.bot.id, self.last_call_id, wait_ms=wait_ms)
        for call in fresh:
            self.last_call_id = call["call_id"]
            self.pending += self._reactions(call)
        return len(fresh)

    def _reactions(self, call: dict) -> list[dict]:
        method, params, result = call["method"], call.get("params") or {}, call.get("result")
        if not call["ok"] or call["replayed"] or method not in REACTION_METHODS:
            return []
        if method == "answerCallbackQuery":
            if params.get("callback_query_id") not in self.clicks:
                return []
            return [{"did": "answered a click", "text": params.get("text"),
                     "show_alert": params.get("show_alert") in (True, "true", "1")}]
        if str(params.get("chat_id")) != str(self.chat_id):
            return []
        if method in SEND_METHODS:
            sent = result if isinstance(result, list) else [result]
            for message in sent:
                self._name(message["message_id"], "bot")
            return [{"did": "sent a message", **{k: m[k] for k in SHOWN_FIELDS if k in m}}
                    for m in sent]
        if method in DELETE_METHODS:
            ids = params.get("message_ids") or [params.get("message_id")]
            ids = ids if isinstance(ids, list) else json.loads(ids)
            return [{"did": "deleted a message", "message": self._place(i)} for i in ids]
        assert method in EDIT_METHODS
        return [{"did": "edited a message", "message": self._place(params.get("message_id")),
                 **{k: result[k] for k in SHOWN_FIELDS if isinstance(result, dict) and k in result}}]

    def _place(self, message_id: Any) -> Place | str:
        try:
            return self.places.get(int(message_id), f"message {message_id} (not of this test)")
        except (TypeError, ValueError):
            return f"message {message_id!r}"


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


def _describe(reaction: dict) -> str:
    fields = ", ".join(f"{k}={v!r}" for k, v in reaction.items() if k != "did")
    return f"the bot {reaction['did']}" + (f": {fields}" if fields else "")


def _args(*values: Any) -> str:
    return ", ".join(repr(v) for v in values if v is not None)
