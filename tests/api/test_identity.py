"""getMe, getChat, getChatMember."""
from __future__ import annotations

import re
import time

import pytest

from tests.support.contract import BotClient, assert_invalid

CHAT_ID = re.compile(r"^vc_[0-9a-f]{40}$")


def test_get_me(client, operator):
    created = operator("createBot", username="weather_bot", display_name="Weather",
                       description="Forecasts on demand")
    me = BotClient(client, created["bot"], created["token"]).ok("getMe")
    assert me == {"id": created["bot"]["id"], "is_bot": True, "username": "weather_bot",
                  "display_name": "Weather", "description": "Forecasts on demand"}
    assert type(me["id"]) is int and me["is_bot"] is True


def test_get_me_defaults(bot):
    me = bot.ok("getMe")
    assert set(me) == {"id", "is_bot", "username", "display_name", "description"}
    assert me["id"] == bot.id and me["username"] == bot.bot["username"]
    assert isinstance(me["display_name"], str) and isinstance(me["description"], str)


def test_get_me_takes_no_parameters(bot):
    assert_invalid(bot.call("getMe", {"chat_id": "x"}), "chat_id")


@pytest.mark.parametrize("method", ["getChat", "getChatMember"])
def test_active_chat(bot, chat, method):
    before = int(time.time())
    result = bot.ok(method, chat_id=chat.chat_id)
    assert result["id"] == chat.chat_id and CHAT_ID.match(result["id"])
    assert result == {"id": chat.chat_id, "type": "private", "status": "active",
                      "started_at": result["started_at"]}
    assert type(result["started_at"]) is int and abs(result["started_at"] - before) <= 5


@pytest.mark.parametrize("method", ["getChat", "getChatMember"])
def test_stopped_chat_shows_stopped_at(bot, chat, operator, method):
    operator("userStop", user_id=chat.user_id, bot_id=bot.id)
    result = bot.ok(method, chat_id=chat.chat_id)
    assert set(result) == {"id", "type", "status", "started_at", "stopped_at"}
    assert result["status"] == "stopped" and result["type"] == "private"
    assert type(result["stopped_at"]) is int and result["stopped_at"] >= result["started_at"]


def test_blocked_chat_shows_stopped(bot, chat, operator):
    operator("userBlock", user_id=chat.user_id, bot_id=bot.id)
    for method in ("getChat", "getChatMember"):
        result = bot.ok(method, chat_id=chat.chat_id)
        assert result["status"] == "stopped" and "stopped_at" in result
        assert set(result) == {"id", "type", "status", "started_at", "stopped_at"}


def test_restarted_chat_drops_stopped_at(bot, chat, operator):
    operator("userStop", user_id=chat.user_id, bot_id=bot.id)
    operator("userStart", user_id=chat.user_id, bot_id=bot.id)
    result = bot.ok("getChat", chat_id=chat.chat_id)
    assert result["status"] == "active" and "stopped_at" not in result


@pytest.mark.parametrize("method", ["getChat", "getChatMember"])
@pytest.mark.parametrize("chat_id", ["vc_" + "0" * 40, "vc_" + "a" * 40, "12345", "@someone",
                                     "vc_", "x" * 200])
def test_invented_chat_ids_are_not_found(bot, chat, method, chat_id):
    bot.error(method, 404, "CHAT_NOT_FOUND", chat_id=chat_id)


@pytest.mark.parametrize("method", ["getChat", "getChatMember", "sendMessage"])
def test_another_bots_chat_is_not_found(new_bot, start_chat, method):
    mine, other = new_bot(), new_bot()
    theirs = start_chat(other)
    params = {"chat_id": theirs.chat_id}
    if method == "sendMessage":
        params["text"] = "hi"
    mine.error(method, 404, "CHAT_NOT_FOUND", **params)


def test_uppercase_chat_id_is_not_the_chat(bot, chat):
    bot.error("getChat", 404, "CHAT_NOT_FOUND", chat_id=chat.chat_id.upper())


@pytest.mark.parametrize("params, field", [
    ({}, "chat_id"), ({"chat_id": ""}, "chat_id"), ({"chat_id": 1}, "chat_id"),
    ({"chat_id": None}, "chat_id"), ({"chat_id": "vc_x", "user_id": 1}, "user_id"),
])
def test_get_chat_parameters(bot, params, field):
    assert_invalid(bot.call("getChat", params), field)
    assert_invalid(bot.call("getChatMember", params), field)


def test_chat_ids_are_random_per_bot_and_user(new_bot, new_user, start_chat):
    first, second = new_bot(), new_bot()
    user, other_user = new_user(), new_user()
    a = start_chat(first, user).chat_id
    b = start_chat(second, user).chat_id
    c = start_chat(first, other_user).chat_id
    assert len({a, b, c}) == 3 and all(CHAT_ID.match(x) for x in (a, b, c))
    second.error("getChat", 404, "CHAT_NOT_FOUND", chat_id=a)
    first.error("getChat", 404, "CHAT_NOT_FOUND", chat_id=b)


def test_chat_id_is_stable_across_stop_block_and_restart(bot, chat, operator):
    for action in ("userStop", "userStart", "userBlock", "userStart"):
        operator(action, user_id=chat.user_id, bot_id=bot.id)
        assert bot.ok("getChat", chat_id=chat.chat_id)["id"] == chat.chat_id


def test_reading_never_grants_sending(bot, chat, operator):
    operator("userStop", user_id=chat.user_id, bot_id=bot.id)
    bot.ok("getChat", chat_id=chat.chat_id)
    bot.ok("getChatMember", chat_id=chat.chat_id)
    bot.error("sendMessage", 403, "BOT_NOT_STARTED", chat_id=chat.chat_id, text="hi")
    assert bot.ok("getChat", chat_id=chat.chat_id)["status"] == "stopped"


def test_no_chat_before_the_first_start(bot, new_user, operator):
    user = new_user()
    response = operator.call("userGetChat", user_id=user, bot_id=bot.id)
    assert response.status_code == 404
    assert response.get_json()["error_code"] == "CHAT_NOT_FOUND"
    assert bot.ok("getUpdates") == []


def test_a_chat_id_of_any_length_is_simply_not_found(bot):
    for chat_id in ("vc_" + "0" * 40, "b" * 257, "x" * 5000):
        bot.error("getChat", 404, "CHAT_NOT_FOUND", chat_id=chat_id)
