"""The operator reads that wait (``wait_ms``: getBotCalls, userGetChat;
docs/testing-tools.md#waiting-without-polling), in process: what a wait
answers once the bot has written, what one that runs out answers (what did
arrive), the bound on waiters beside a worker's threads, the limits of the
parameters, and a stopping process's waiters. No figure is asserted: a wait
that did not wake would only make a test slow."""
from __future__ import annotations

import threading
import time

import pytest

from botsvc import commits
from botsvc.contract import OPERATOR_WAIT_MAX_MS
from tests.support.contract import Operator, assert_invalid

pytestmark = pytest.mark.call_log   # the log, as an installation has it
LONG_MS = OPERATOR_WAIT_MAX_MS   # a wait that must be woken, not run out


@pytest.fixture
def app(make_app):
    return make_app(test_tools=True, threads=4)   # two waiters at most


class Waiting:
    """An operator read made in a thread of its own (its own client)."""

    def __init__(self, app, method: str, **params):
        self.answer = None
        operator = Operator(app.test_client())
        self.thread = threading.Thread(
            target=lambda: setattr(self, "answer", operator(method, **params)), daemon=True)
        before = commits._waiting
        self.thread.start()
        _until(lambda: commits._waiting > before or not self.thread.is_alive())

    def result(self) -> dict:
        self.thread.join(60)
        assert not self.thread.is_alive()
        return self.answer


def _until(condition) -> None:
    deadline = time.monotonic() + 30   # a hang guard, not a measure
    while not condition():
        assert time.monotonic() < deadline
        time.sleep(0.002)


def test_a_waiting_read_of_the_calls_answers_with_the_call_made_meanwhile(app, bot, chat,
                                                                          operator):
    bot.ok("getMe")
    first = operator("getBotCalls", bot_id=bot.id)["calls"][0]["call_id"]
    waiting = Waiting(app, "getBotCalls", bot_id=bot.id, after_call_id=first,
                      wait_ms=LONG_MS)
    assert commits._waiting == 1
    sent = bot.ok("sendMessage", chat_id=chat.chat_id, text="hi")
    page = waiting.result()
    [call] = page["calls"]
    assert (call["method"], call["result"]) == ("sendMessage", sent)
    assert set(page) == {"calls", "next_cursor", "empty_polls", "last_poll_at"}


def test_a_wait_that_runs_out_answers_what_did_arrive(bot, chat, operator):
    sent = bot.ok("sendMessage", chat_id=chat.chat_id, text="one")
    everything = operator("getBotCalls", bot_id=bot.id)
    newest = everything["calls"][0]["call_id"]
    nothing = operator("getBotCalls", bot_id=bot.id, after_call_id=newest, wait_ms=30)
    assert nothing == {**everything, "calls": []}   # the same page, no call newer
    # A read with calls there already answers at once, as without the wait.
    assert operator("getBotCalls", bot_id=bot.id, wait_ms=LONG_MS) == everything
    page = operator("userGetChat", user_id=chat.user_id, bot_id=bot.id, wait_ms=30,
                    wait_after_message_id=sent["message_id"])
    assert page == operator("userGetChat", user_id=chat.user_id, bot_id=bot.id)
    assert page["messages"][-1]["text"] == "one"


def test_a_waiting_read_of_the_chat_answers_with_the_bot_s_message(app, bot, chat, operator):
    first = bot.ok("sendMessage", chat_id=chat.chat_id, text="welcome")
    waiting = Waiting(app, "userGetChat", user_id=chat.user_id, bot_id=bot.id,
                      wait_ms=LONG_MS, wait_after_message_id=first["message_id"])
    # The user's own message does not end the wait: the bot's answer does.
    operator("userSendMessage", user_id=chat.user_id, bot_id=bot.id, text="hello")
    sent = bot.ok("sendMessage", chat_id=chat.chat_id, text="hello to you")
    page = waiting.result()
    assert [m["text"] for m in page["messages"]] == ["/start", "welcome", "hello",
                                                     "hello to you"]
    assert page["messages"][-1]["message_id"] == sent["message_id"]


def test_waiters_take_at_most_half_a_worker_s_threads(app, bot, chat, operator):
    newest = 0   # the bot has made no call yet
    waiting = [Waiting(app, "getBotCalls", bot_id=bot.id, after_call_id=newest,
                       wait_ms=LONG_MS) for _ in range(2)]
    assert commits._waiting == 2
    # The third is answered at once: a read, as if it had not asked to wait.
    assert operator("getBotCalls", bot_id=bot.id, after_call_id=newest,
                    wait_ms=LONG_MS)["calls"] == []
    sent = bot.ok("sendMessage", chat_id=chat.chat_id, text="for both")
    for each in waiting:
        assert [c["result"] for c in each.result()["calls"]] == [sent]
    assert commits._waiting == 0


def test_a_stopping_process_s_waiters_answer(app, bot, operator, monkeypatch):
    newest = 0   # the bot has made no call yet
    waiting = Waiting(app, "getBotCalls", bot_id=bot.id, after_call_id=newest,
                      wait_ms=LONG_MS)
    monkeypatch.setattr(commits, "_stopping", False)   # put back after the test
    commits.stop_waiting()
    assert waiting.result()["calls"] == []
    assert operator("getBotCalls", bot_id=bot.id, after_call_id=newest,
                    wait_ms=LONG_MS)["calls"] == []   # no new waiter either


@pytest.mark.parametrize("method", ["getBotCalls", "userGetChat"])
def test_the_wait_is_0_to_10_seconds_in_milliseconds(bot, chat, operator, method):
    target = {"bot_id": bot.id, **({"user_id": chat.user_id} if method == "userGetChat" else {})}
    for wait_ms in (0, 1):
        assert operator(method, **target, wait_ms=wait_ms)
    for wrong in (-1, OPERATOR_WAIT_MAX_MS + 1, 0.5, "5", True):
        assert_invalid(operator.call(method, **target, wait_ms=wrong), "wait_ms")


def test_wait_after_message_id_is_a_message_id_or_0(bot, chat, operator):
    target = {"bot_id": bot.id, "user_id": chat.user_id}
    assert operator("userGetChat", **target, wait_after_message_id=0)
    for wrong in (-1, "1", 1.5):
        assert_invalid(operator.call("userGetChat", **target, wait_after_message_id=wrong),
                       "wait_after_message_id")
