"""injectFault and clearFaults: the bot's next calls of a
method held and failed on demand, checked right after the token, taking no
rate and stored under no Idempotency-Key."""
from __future__ import annotations

import time

import pytest

from botsvc.db import connect
from tests.support.contract import assert_failure, assert_invalid

CODES = {"RATE_LIMITED": 429, "BOT_BLOCKED": 403, "BOT_NOT_STARTED": 403,
         "CHAT_NOT_FOUND": 404, "MESSAGE_NOT_FOUND": 404, "BOT_DISABLED": 403,
         "PLATFORM_DISABLED": 503, "DEPENDENCY_UNAVAILABLE": 503, "INTERNAL_ERROR": 500}


def has_faults_flag(app, bot_id: int) -> int:
    conn = connect(app.config["SETTINGS"].db_path)
    try:
        return conn.execute("SELECT has_faults FROM bots WHERE id = ?", (bot_id,)).fetchone()[0]
    finally:
        conn.close()


@pytest.mark.parametrize("code, status", CODES.items())
def test_each_error_code_is_answered_with_its_status(operator, bot, code, status):
    assert operator("injectFault", bot_id=bot.id, method="getMe", error_code=code) is True
    response = bot.call("getMe")
    expected = {"injected": True, **({"retry_after": 1} if code == "RATE_LIMITED" else {})}
    assert assert_failure(response, status, code)["parameters"] == expected
    assert response.headers.get("Retry-After") == ("1" if code == "RATE_LIMITED" else None)
    assert bot.ok("getMe")["id"] == bot.id          # count defaults to 1


def test_exactly_count_calls_fail_then_the_method_works(operator, bot, app):
    operator("injectFault", bot_id=bot.id, method="getMe", error_code="INTERNAL_ERROR", count=3)
    assert has_faults_flag(app, bot.id) == 1
    for _ in range(3):
        bot.error("getMe", 500, "INTERNAL_ERROR")
    assert bot.ok("getMe")["id"] == bot.id
    assert has_faults_flag(app, bot.id) == 0       # the happy path is cheap again


def test_only_that_bot_and_that_method(operator, bot, new_bot, chat):
    other = new_bot()
    operator("injectFault", bot_id=bot.id, method="sendMessage", error_code="BOT_BLOCKED")
    assert other.ok("getMe") and bot.ok("getMe")
    bot.error("sendMessage", 403, "BOT_BLOCKED", chat_id=chat.chat_id, text="x")
    assert bot.ok("sendMessage", chat_id=chat.chat_id, text="x")


def test_a_new_fault_replaces_the_waiting_one(operator, bot):
    operator("injectFault", bot_id=bot.id, method="getMe", error_code="INTERNAL_ERROR", count=5)
    operator("injectFault", bot_id=bot.id, method="getMe", error_code="CHAT_NOT_FOUND", count=1)
    bot.error("getMe", 404, "CHAT_NOT_FOUND")
    assert bot.ok("getMe")


def test_clear_faults(operator, bot, app):
    operator("injectFault", bot_id=bot.id, method="getMe", error_code="INTERNAL_ERROR", count=9)
    operator("injectFault", bot_id=bot.id, method="getUpdates", delay_ms=5000)
    assert operator("clearFaults", bot_id=bot.id) is True
    assert bot.ok("getMe") and bot.ok("getUpdates") == []
    assert has_faults_flag(app, bot.id) == 0
    assert operator("clearFaults", bot_id=bot.id) is True     # nothing to clear: fine too


def test_a_delay_alone_holds_the_call_then_runs_it(operator, bot, chat, app):
    operator("injectFault", bot_id=bot.id, method="sendMessage", delay_ms=300)
    started = time.monotonic()
    sent = bot.ok("sendMessage", chat_id=chat.chat_id, text="late")
    assert time.monotonic() - started >= 0.3 and sent["text"] == "late"
    assert has_faults_flag(app, bot.id) == 0       # used up: the next call is not held


def test_a_delay_then_the_error(operator, bot):
    operator("injectFault", bot_id=bot.id, method="getMe", error_code="RATE_LIMITED",
             delay_ms=200)
    started = time.monotonic()
    bot.error("getMe", 429, "RATE_LIMITED")
    assert time.monotonic() - started >= 0.2


def test_checked_right_after_the_token(operator, bot, client):
    operator("injectFault", bot_id=bot.id, method="getMe", error_code="INTERNAL_ERROR", count=2)
    response = client.post("/v2/getMe", json={}, headers={"Authorization": f"Bearer {bot.id}:x"})
    assert_failure(response, 401, "UNAUTHORIZED")            # no token, no fault taken
    bot.error("getMe", 500, "INTERNAL_ERROR", unexpected="parameter")   # before validation
    operator("setBotDisabled", bot_id=bot.id, disabled=True)
    bot.error("getMe", 500, "INTERNAL_ERROR")                # before the bot-disabled check
    bot.error("getMe", 403, "BOT_DISABLED")
    operator("setBotDisabled", bot_id=bot.id, disabled=False)
    operator("injectFault", bot_id=bot.id, method="getMe", error_code="INTERNAL_ERROR")
    operator("setPlatformDisabled", disabled=True)
    bot.error("getMe", 503, "PLATFORM_DISABLED")             # the platform comes first
    operator("setPlatformDisabled", disabled=False)
    bot.error("getMe", 500, "INTERNAL_ERROR")


def test_an_injected_failure_takes_no_rate(make_app, operator_for, clock):
    app = make_app(test_tools=True, rate_api_per_sec=2)
    operator, bot, _ = operator_for(app)
    operator("injectFault", bot_id=bot.id, method="getMe", error_code="INTERNAL_ERROR", count=5)
    for _ in range(5):
        bot.error("getMe", 500, "INTERNAL_ERROR")
    assert bot.ok("getMe") and bot.ok("getMe")
    bot.error("getMe", 429, "RATE_LIMITED")


def test_an_injected_failure_is_stored_under_no_key(operator, bot, chat):
    def send():
        return bot.call("sendMessage", {"chat_id": chat.chat_id, "text": "keyed"},
                        headers={"Idempotency-Key": "retry-me"})

    operator("injectFault", bot_id=bot.id, method="sendMessage", error_code="CHAT_NOT_FOUND")
    assert_failure(send(), 404, "CHAT_NOT_FOUND", injected=True)
    first = send()
    assert first.status_code == 200 and "Idempotent-Replayed" not in first.headers
    replay = send()
    assert replay.headers["Idempotent-Replayed"] == "true"
    assert replay.get_json() == first.get_json()


@pytest.mark.parametrize("params, field", [
    ({"method": "getMe"}, "bot_id"),
    ({"bot_id": 999, "method": "getMe"}, "bot_id"),
    ({"bot_id": "1", "method": "getMe"}, "bot_id"),
    ({}, "method"),
    ({"method": "getme"}, "method"),
    ({"method": "createBot"}, "method"),
    ({"method": ""}, "method"),
    ({"method": 5}, "method"),
    ({"method": "getMe", "error_code": "INVALID_PARAMETER"}, "error_code"),
    ({"method": "getMe", "error_code": "internal_error"}, "error_code"),
    ({"method": "getMe", "error_code": 500}, "error_code"),
    ({"method": "getMe", "delay_ms": -1}, "delay_ms"),
    ({"method": "getMe", "delay_ms": 30001}, "delay_ms"),
    ({"method": "getMe", "delay_ms": 1.5}, "delay_ms"),
    ({"method": "getMe", "count": 0}, "count"),
    ({"method": "getMe", "count": 1001}, "count"),
    ({"method": "getMe", "count": "2"}, "count"),
    ({"method": "getMe", "times": 2}, "times"),
])
def test_inject_fault_validation(operator, bot, params, field):
    params = {"bot_id": bot.id, **params} if field != "bot_id" else params
    assert_invalid(operator.call("injectFault", **params), field)
    assert bot.ok("getMe")


def test_inject_fault_boundaries_are_accepted(operator, bot):
    assert operator("injectFault", bot_id=bot.id, method="uploadFile", delay_ms=30000,
                    count=1000) is True
    assert operator("injectFault", bot_id=bot.id, method="getMe", delay_ms=0, count=1) is True
    assert bot.ok("getMe")                         # no delay, no error: run normally


def test_clear_faults_validation(operator):
    assert_invalid(operator.call("clearFaults"), "bot_id")
    assert_invalid(operator.call("clearFaults", bot_id=999), "bot_id")
