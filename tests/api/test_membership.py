"""The membership state machine and the updates it produces."""
from __future__ import annotations

import time

import pytest

from tests.support.contract import assert_invalid

MESSAGE_KEYS = {"message_id", "chat", "date", "type", "from_bot", "text"}


def _only_update(bot):
    updates = bot.ok("getUpdates")
    assert len(updates) == 1, updates
    bot.ok("getUpdates", offset=updates[0]["update_id"] + 1)
    return updates[0]


def _assert_user_text(message, chat_id, text):
    assert set(message) == MESSAGE_KEYS, message
    assert message["chat"] == {"id": chat_id, "type": "private"}
    assert message["type"] == "text" and message["from_bot"] is False
    assert message["text"] == text
    assert type(message["message_id"]) is int and type(message["date"]) is int
    assert abs(message["date"] - time.time()) <= 5


def test_start_update_without_parameter(bot, start_chat):
    chat = start_chat(bot)
    update = _only_update(bot)
    assert set(update) == {"update_id", "message", "membership"}
    assert update["update_id"] == chat.update_id and type(update["update_id"]) is int
    _assert_user_text(update["message"], chat.chat_id, "/start")
    assert update["membership"] == {"chat_id": chat.chat_id, "status": "active"}


@pytest.mark.parametrize("parameter", ["x", "ref_42", "A-b_C-9", "z" * 64])
def test_start_update_with_parameter(bot, start_chat, parameter):
    chat = start_chat(bot, start_parameter=parameter)
    update = _only_update(bot)
    assert set(update) == {"update_id", "message", "membership"}
    _assert_user_text(update["message"], chat.chat_id, f"/start {parameter}")
    assert update["membership"] == {"chat_id": chat.chat_id, "status": "active",
                                    "start_parameter": parameter}


@pytest.mark.parametrize("parameter", ["", "z" * 65, "with space", "caf\u00e9", "a/b", "a.b",
                                       "a+b", "\u0661", "tab\t", "x\n"])
def test_bad_start_parameter_is_rejected(bot, new_user, operator, parameter):
    user = new_user()
    assert_invalid(operator.call("userStart", user_id=user, bot_id=bot.id,
                                 start_parameter=parameter), "start_parameter")
    assert bot.ok("getUpdates") == []
    assert operator.call("userGetChat", user_id=user, bot_id=bot.id).status_code == 404


def test_stop_update(bot, chat, operator):
    _only_update(bot)
    assert operator("userStop", user_id=chat.user_id, bot_id=bot.id) is True
    update = _only_update(bot)
    assert set(update) == {"update_id", "message", "membership"}
    _assert_user_text(update["message"], chat.chat_id, "/stop")
    assert update["membership"] == {"chat_id": chat.chat_id, "status": "stopped"}


def test_block_update_is_membership_alone(bot, chat, operator):
    _only_update(bot)
    assert operator("userBlock", user_id=chat.user_id, bot_id=bot.id) is True
    update = _only_update(bot)
    assert set(update) == {"update_id", "membership"}
    assert update["membership"] == {"chat_id": chat.chat_id, "status": "stopped",
                                    "reason": "blocked"}
    view = operator("userGetChat", user_id=chat.user_id, bot_id=bot.id)
    assert [m["text"] for m in view["messages"]] == ["/start"]  # no message for a block


def test_sending_after_stop_is_bot_not_started(bot, chat, operator):
    operator("userStop", user_id=chat.user_id, bot_id=bot.id)
    bot.error("sendMessage", 403, "BOT_NOT_STARTED", chat_id=chat.chat_id, text="hi")


def test_sending_after_block_is_bot_blocked(bot, chat, operator):
    operator("userBlock", user_id=chat.user_id, bot_id=bot.id)
    bot.error("sendMessage", 403, "BOT_BLOCKED", chat_id=chat.chat_id, text="hi")


def test_block_after_stop_is_still_blocked(bot, chat, operator):
    operator("userStop", user_id=chat.user_id, bot_id=bot.id)
    operator("userBlock", user_id=chat.user_id, bot_id=bot.id)
    bot.error("sendMessage", 403, "BOT_BLOCKED", chat_id=chat.chat_id, text="hi")
    assert bot.ok("getChat", chat_id=chat.chat_id)["status"] == "stopped"


@pytest.mark.parametrize("leave", ["userStop", "userBlock"])
def test_restart_keeps_the_chat_id_and_allows_sending(bot, chat, operator, leave):
    operator(leave, user_id=chat.user_id, bot_id=bot.id)
    bot.ok("getUpdates", offset=10 ** 9)
    again = operator("userStart", user_id=chat.user_id, bot_id=bot.id, start_parameter="back")
    assert again["chat_id"] == chat.chat_id
    update = _only_update(bot)
    assert update["update_id"] == again["update_id"]
    assert update["membership"] == {"chat_id": chat.chat_id, "status": "active",
                                    "start_parameter": "back"}
    assert bot.ok("getChat", chat_id=chat.chat_id)["status"] == "active"
    assert bot.ok("sendMessage", chat_id=chat.chat_id, text="welcome back")["text"]


def test_start_while_active_sends_another_start_update(bot, chat, operator):
    _only_update(bot)
    again = operator("userStart", user_id=chat.user_id, bot_id=bot.id, start_parameter="p2")
    assert again["chat_id"] == chat.chat_id
    update = _only_update(bot)
    assert update["message"]["text"] == "/start p2"
    assert update["membership"]["start_parameter"] == "p2"


def test_user_message_update_is_message_alone(bot, chat, operator):
    _only_update(bot)
    sent = operator("userSendMessage", user_id=chat.user_id, bot_id=bot.id, text="hello bot")
    _assert_user_text(sent, chat.chat_id, "hello bot")
    update = _only_update(bot)
    assert set(update) == {"update_id", "message"}
    assert update["message"] == sent


def test_user_reply_carries_reply_to_message_id(bot, chat, operator):
    mine = bot.ok("sendMessage", chat_id=chat.chat_id, text="question?")
    sent = operator("userSendMessage", user_id=chat.user_id, bot_id=bot.id, text="answer",
                    reply_to_message_id=mine["message_id"])
    assert sent["reply_to_message_id"] == mine["message_id"]
    missing = operator.call("userSendMessage", user_id=chat.user_id, bot_id=bot.id,
                            text="answer", reply_to_message_id=mine["message_id"] + 50)
    assert (missing.status_code, missing.get_json()["error_code"]) == (404, "MESSAGE_NOT_FOUND")


@pytest.mark.parametrize("text, parameter", [("/start x", "x"), ("/start", None),
                                             ("/start deep_link-1", "deep_link-1")])
def test_user_typing_start_acts_as_start(bot, new_user, operator, text, parameter):
    user = new_user()
    sent = operator("userSendMessage", user_id=user, bot_id=bot.id, text=text)
    assert sent["text"] == text and sent["from_bot"] is False
    update = _only_update(bot)
    membership = {"chat_id": sent["chat"]["id"], "status": "active"}
    if parameter:
        membership["start_parameter"] = parameter
    assert update["membership"] == membership and update["message"] == sent
    assert bot.ok("sendMessage", chat_id=sent["chat"]["id"], text="hi")["from_bot"] is True


def test_user_typing_stop_acts_as_stop(bot, chat, operator):
    _only_update(bot)
    sent = operator("userSendMessage", user_id=chat.user_id, bot_id=bot.id, text="/stop")
    assert sent["text"] == "/stop"
    update = _only_update(bot)
    assert update["membership"] == {"chat_id": chat.chat_id, "status": "stopped"}
    bot.error("sendMessage", 403, "BOT_NOT_STARTED", chat_id=chat.chat_id, text="hi")


def test_user_cannot_message_a_bot_they_stopped(bot, chat, operator):
    operator("userStop", user_id=chat.user_id, bot_id=bot.id)
    response = operator.call("userSendMessage", user_id=chat.user_id, bot_id=bot.id, text="hi")
    assert (response.status_code, response.get_json()["error_code"]) == (403, "BOT_NOT_STARTED")


def test_membership_is_independent_per_bot(new_bot, new_user, start_chat, operator):
    first, second = new_bot(), new_bot()
    user = new_user()
    a, b = start_chat(first, user), start_chat(second, user)
    operator("userBlock", user_id=user, bot_id=first.id)
    first.error("sendMessage", 403, "BOT_BLOCKED", chat_id=a.chat_id, text="hi")
    assert second.ok("sendMessage", chat_id=b.chat_id, text="hi")["text"] == "hi"
    assert [u["membership"]["status"] for u in second.ok("getUpdates")] == ["active"]


@pytest.mark.parametrize("leave,code", [("userStop", "BOT_NOT_STARTED"),
                                        ("userBlock", "BOT_BLOCKED")])
def test_stop_typed_by_a_user_who_left_is_refused(bot, chat, operator, leave, code):
    operator(leave, user_id=chat.user_id, bot_id=bot.id)
    response = operator.call("userSendMessage", user_id=chat.user_id, bot_id=bot.id,
                             text="/stop")
    assert (response.status_code, response.get_json()["error_code"]) == (403, code)


def test_start_and_stop_typed_as_messages_return_the_new_message(bot, chat, operator):
    stop = operator("userSendMessage", user_id=chat.user_id, bot_id=bot.id, text="/stop")
    start = operator("userSendMessage", user_id=chat.user_id, bot_id=bot.id, text="/start x")
    assert (stop["text"], start["text"]) == ("/stop", "/start x")
    assert start["message_id"] == stop["message_id"] + 1 and stop["from_bot"] is False
