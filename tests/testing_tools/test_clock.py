"""getClock and advanceClock: one service clock with a shared
offset, followed by every date, retention and rate window."""
from __future__ import annotations

import time

import pytest

from botsvc import clock
from botsvc.db import connect
from tests.support.contract import ADMIN_TOKEN, assert_failure, assert_invalid

DAY = 24 * 3600


def test_get_clock_answers_now_and_offset(operator):
    before = int(time.time())
    reading = operator("getClock")
    assert set(reading) == {"now", "offset"} and reading["offset"] == 0
    assert type(reading["now"]) is int and before <= reading["now"] <= time.time() + 1


def test_get_clock_is_there_without_the_test_tools(make_app):
    client = make_app().test_client()
    response = client.post("/manage/v1/getClock", json={},
                           headers={"Authorization": f"Bearer {ADMIN_TOKEN}"})
    assert response.status_code == 200 and response.get_json()["result"]["offset"] == 0


@pytest.mark.parametrize("method", ["advanceClock", "reset", "injectFault", "clearFaults"])
@pytest.mark.parametrize("token", [ADMIN_TOKEN, "wrong", None])
def test_test_tools_do_not_exist_without_the_setting(make_app, method, token):
    client = make_app().test_client()
    headers = {"Authorization": f"Bearer {token}"} if token else {}
    response = client.post(f"/manage/v1/{method}", json={"seconds": 5}, headers=headers)
    assert_failure(response, 404, "METHOD_NOT_FOUND")


def test_test_tools_need_the_admin_token(client):
    response = client.post("/manage/v1/advanceClock", json={"seconds": 5},
                           headers={"Authorization": "Bearer wrong"})
    assert_failure(response, 401, "UNAUTHORIZED")


def test_advance_clock_moves_now_and_keeps_running(operator):
    start = operator("getClock")
    moved = operator("advanceClock", seconds=3600)
    assert moved["offset"] == 3600
    assert start["now"] + 3600 <= moved["now"] <= start["now"] + 3602
    assert operator("advanceClock", seconds=1)["offset"] == 3601
    assert operator("getClock")["offset"] == 3601


@pytest.mark.parametrize("seconds", [1, 31536000])
def test_advance_clock_bounds_accepted(operator, seconds):
    assert operator("advanceClock", seconds=seconds)["offset"] == seconds


@pytest.mark.parametrize("params", [{}, {"seconds": 0}, {"seconds": -5},
                                    {"seconds": 31536001}, {"seconds": 1.5}, {"seconds": "60"},
                                    {"seconds": True}, {"seconds": None}])
def test_advance_clock_refuses_bad_seconds(operator, params):
    assert_invalid(operator.call("advanceClock", **params), "seconds")
    assert operator("getClock")["offset"] == 0


def test_advance_clock_refuses_unknown_parameters(operator):
    assert_invalid(operator.call("advanceClock", seconds=5, minutes=1), "minutes")
    assert_invalid(operator.call("getClock", at=1), "at")


def test_dates_follow_the_service_clock(operator, bot, chat):
    operator("advanceClock", seconds=10 * DAY)
    later = time.time() + 10 * DAY
    sent = bot.ok("sendMessage", chat_id=chat.chat_id, text="from the future")
    assert abs(sent["date"] - later) <= 2
    user_message = operator("userSendMessage", user_id=chat.user_id, bot_id=bot.id, text="hi")
    assert abs(user_message["date"] - later) <= 2
    [update] = bot.ok("getUpdates")   # the /start is over a day old now: gone
    assert update["message"]["date"] == user_message["date"]
    operator("userStop", user_id=chat.user_id, bot_id=bot.id)
    operator("userStart", user_id=chat.user_id, bot_id=bot.id)
    assert abs(bot.ok("getChat", chat_id=chat.chat_id)["started_at"] - later) <= 2


def test_updates_older_than_a_day_of_service_time_are_gone(operator, bot, chat):
    assert len(bot.ok("getUpdates")) == 1
    operator("advanceClock", seconds=DAY - 60)
    assert len(bot.ok("getUpdates")) == 1
    operator("advanceClock", seconds=61)
    assert bot.ok("getUpdates") == []
    assert bot.ok("getWebhookInfo")["pending_update_count"] == 0


def test_idempotency_keys_expire_after_a_day_of_service_time(operator, bot, chat):
    def send():
        return bot.call("sendMessage", {"chat_id": chat.chat_id, "text": "once"},
                        headers={"Idempotency-Key": "k1"})

    first = send().get_json()["result"]
    operator("advanceClock", seconds=DAY - 60)
    assert send().headers.get("Idempotent-Replayed") == "true"
    operator("advanceClock", seconds=61)
    again = send()
    assert "Idempotent-Replayed" not in again.headers
    assert again.get_json()["result"]["message_id"] != first["message_id"]


def test_rate_windows_follow_the_service_clock(make_app, operator_for):
    app = make_app(test_tools=True, rate_broadcasts_per_min=1)
    operator, bot, chat = operator_for(app)
    assert bot.ok("createBroadcast", method="sendMessage", payload={"text": "a"})
    bot.error("createBroadcast", 429, "RATE_LIMITED", method="sendMessage", payload={"text": "b"})
    operator("advanceClock", seconds=60)
    assert bot.ok("createBroadcast", method="sendMessage", payload={"text": "b"})


def test_the_offset_is_kept_in_the_database_and_survives_a_restart(make_app, operator, app):
    operator("advanceClock", seconds=500)
    clock.remember_offset(0)               # a process that has not seen it yet
    restarted = make_app(test_tools=True)  # a new app on the same data dir loads it
    assert clock.offset() == 500
    conn = connect(restarted.config["SETTINGS"].db_path)
    try:
        assert conn.execute("SELECT clock_offset FROM platform").fetchone()[0] == 500
    finally:
        conn.close()


def test_a_bot_request_brings_a_stale_process_the_offset(operator, bot):
    operator("advanceClock", seconds=700)
    clock.remember_offset(0)               # as another worker process would have it
    bot.ok("getMe")
    assert clock.offset() == 700
