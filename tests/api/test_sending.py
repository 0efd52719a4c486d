"""sendMessage: text limits in bytes, parse_mode, replies, transports and the
result shape."""
from __future__ import annotations

import time

import pytest

from tests.support.contract import assert_failure, assert_invalid


def test_result_shape(bot, chat):
    before = int(time.time())
    sent = bot.ok("sendMessage", chat_id=chat.chat_id, text="hello")
    assert set(sent) == {"message_id", "chat", "date", "type", "from_bot", "text"}
    assert sent["chat"] == {"id": chat.chat_id, "type": "private"}
    assert sent["type"] == "text" and sent["from_bot"] is True and sent["text"] == "hello"
    assert type(sent["message_id"]) is int and sent["message_id"] >= 1
    assert type(sent["date"]) is int and before - 1 <= sent["date"] <= time.time() + 1


@pytest.mark.parametrize("text", [
    "a" * 16384,
    "\U0001F600" * 4096,                 # 4-byte characters, 4096 of them
    "\u20ac" * 5461 + "a",               # 3-byte characters
    "\u00e9" * 8192,                     # 2-byte characters
    "x",
    " ",
    "\n",
])
def test_text_up_to_16384_bytes_is_accepted(bot, chat, text):
    assert len(text.encode()) <= 16384
    sent = bot.ok("sendMessage", chat_id=chat.chat_id, text=text)
    assert sent["text"] == text


@pytest.mark.parametrize("text", [
    "a" * 16385,
    "\U0001F600" * 4096 + "a",
    "\u20ac" * 5462,                     # 5462 characters, 16386 bytes
    "\u00e9" * 8193,                     # 8193 characters, 16386 bytes
    "",
])
def test_text_over_16384_bytes_or_empty_is_rejected(bot, chat, text):
    assert_invalid(bot.call("sendMessage", {"chat_id": chat.chat_id, "text": text}), "text")


def test_text_keeps_markup_as_plain_text(bot, chat):
    text = "<b>bold</b> *star* _u_ [l](https://example.org) &amp;"
    assert bot.ok("sendMessage", chat_id=chat.chat_id, text=text)["text"] == text


def test_parse_mode_plain_is_accepted(bot, chat):
    sent = bot.ok("sendMessage", chat_id=chat.chat_id, text="<b>x</b>", parse_mode="plain")
    assert sent["text"] == "<b>x</b>"


@pytest.mark.parametrize("mode", ["HTML", "Markdown", "MarkdownV2", "html", "Plain", "PLAIN",
                                  "", "plain "])
def test_other_parse_modes_are_rejected(bot, chat, mode):
    assert_invalid(bot.call("sendMessage", {"chat_id": chat.chat_id, "text": "x",
                                            "parse_mode": mode}), "parse_mode")


def test_reply_to_a_received_or_sent_message(bot, chat, operator):
    start_id = bot.ok("getUpdates")[0]["message"]["message_id"]
    reply = bot.ok("sendMessage", chat_id=chat.chat_id, text="re", reply_to_message_id=start_id)
    assert reply["reply_to_message_id"] == start_id
    assert set(reply) == {"message_id", "chat", "date", "type", "from_bot", "text",
                          "reply_to_message_id"}
    again = bot.ok("sendMessage", chat_id=chat.chat_id, text="re2",
                   reply_to_message_id=reply["message_id"])
    assert again["reply_to_message_id"] == reply["message_id"]
    user = operator("userSendMessage", user_id=chat.user_id, bot_id=bot.id, text="hey")
    assert bot.ok("sendMessage", chat_id=chat.chat_id, text="re3",
                  reply_to_message_id=user["message_id"])["reply_to_message_id"] == \
        user["message_id"]


def test_reply_to_an_unknown_message(bot, chat):
    bot.error("sendMessage", 404, "MESSAGE_NOT_FOUND", chat_id=chat.chat_id, text="x",
              reply_to_message_id=9999)


def test_reply_to_a_message_in_another_chat_of_the_same_bot(bot, chat, start_chat):
    other = start_chat(bot)
    theirs = bot.ok("sendMessage", chat_id=other.chat_id, text="for the other chat")
    bot.error("sendMessage", 404, "MESSAGE_NOT_FOUND", chat_id=chat.chat_id, text="x",
              reply_to_message_id=theirs["message_id"])


def test_reply_to_another_bots_message(new_bot, start_chat):
    mine, other = new_bot(), new_bot()
    my_chat, their_chat = start_chat(mine), start_chat(other)
    for n in range(4):
        last = other.ok("sendMessage", chat_id=their_chat.chat_id, text=f"t{n}")
    # message ids 2..5 exist for the other bot only; mine has 1 (its /start)
    mine.error("sendMessage", 404, "MESSAGE_NOT_FOUND", chat_id=my_chat.chat_id, text="x",
               reply_to_message_id=last["message_id"])


@pytest.mark.parametrize("value", [True, "1", 1.0, [1], {"id": 1}])
def test_reply_to_message_id_must_be_an_integer(bot, chat, value):
    assert_invalid(bot.call("sendMessage", {"chat_id": chat.chat_id, "text": "x",
                                            "reply_to_message_id": value}),
                   "reply_to_message_id")


def test_nothing_is_sent_when_the_reply_target_is_missing(bot, chat, operator):
    bot.error("sendMessage", 404, "MESSAGE_NOT_FOUND", chat_id=chat.chat_id, text="lost",
              reply_to_message_id=77)
    view = operator("userGetChat", user_id=chat.user_id, bot_id=bot.id)
    assert [m["text"] for m in view["messages"]] == ["/start"]


def test_unknown_chat(bot, chat):
    bot.error("sendMessage", 404, "CHAT_NOT_FOUND", chat_id="vc_" + "0" * 40, text="x")


def test_validation_comes_before_the_chat_lookup(bot):
    assert_invalid(bot.call("sendMessage", {"chat_id": "vc_" + "0" * 40, "text": ""}), "text")


def _multipart(bot, fields: dict):
    return bot.call("sendMessage", data=fields, content_type="multipart/form-data")


def test_multipart_send_message(bot, chat):
    start_id = bot.ok("getUpdates")[0]["message"]["message_id"]
    assert start_id == 1
    response = _multipart(bot, {"chat_id": chat.chat_id, "text": "via form",
                                "reply_to_message_id": "1", "parse_mode": "plain"})
    assert response.status_code == 200, response.get_json()
    sent = response.get_json()["result"]
    assert sent["text"] == "via form" and sent["reply_to_message_id"] == 1
    assert sent["chat"]["id"] == chat.chat_id and sent["from_bot"] is True


def test_multipart_numeric_looking_text_stays_text(bot, chat):
    response = _multipart(bot, {"chat_id": chat.chat_id, "text": "2"})
    assert response.status_code == 200 and response.get_json()["result"]["text"] == "2"


@pytest.mark.parametrize("fields, field", [
    ({"text": "x", "reply_to_message_id": "abc"}, "reply_to_message_id"),
    ({"text": "x", "reply_to_message_id": "true"}, "reply_to_message_id"),
    ({"text": "x", "parse_mode": "HTML"}, "parse_mode"),
    ({"text": ""}, "text"),
    ({"text": "x", "bogus": "1"}, "bogus"),
    ({}, "text"),
])
def test_multipart_validation(bot, chat, fields, field):
    assert_invalid(_multipart(bot, {"chat_id": chat.chat_id, **fields}), field)


@pytest.mark.parametrize("method", ["sendMessage", "setWebhook", "sendVideo"])
def test_a_multipart_type_with_no_boundary_reads_as_an_empty_form(bot, chat, method):
    # Werkzeug reads nothing of a form it cannot parse; the call goes on as one
    # with no fields (a required one is missing), never a 500 from the rule
    # that nothing is written before the body is read (found by the fuzzer).
    field = {"sendMessage": "chat_id", "setWebhook": "url", "sendVideo": "chat_id"}[method]
    response = bot.call(method, data=b'{"chat_id": "x"}',
                        headers={"Content-Type": "multipart/form-data"})
    assert_invalid(response, field)


def test_multipart_file_where_none_is_accepted(bot, chat):
    import io
    response = _multipart(bot, {"chat_id": chat.chat_id,
                                "text": (io.BytesIO(b"hello"), "t.txt")})
    assert_invalid(response, "text")


def test_user_sees_the_sent_message(bot, chat, operator):
    sent = bot.ok("sendMessage", chat_id=chat.chat_id, text="for you")
    view = operator("userGetChat", user_id=chat.user_id, bot_id=bot.id)
    assert view["chat_id"] == chat.chat_id and view["status"] == "active"
    assert [m["message_id"] for m in view["messages"]][-1] == sent["message_id"]
    shown = view["messages"][-1]
    assert shown["text"] == "for you" and shown["from_bot"] is True
    assert view["messages"][0]["text"] == "/start" and view["messages"][0]["from_bot"] is False


def test_sent_messages_do_not_become_updates(bot, chat):
    bot.ok("getUpdates", offset=chat.update_id + 1)
    bot.ok("sendMessage", chat_id=chat.chat_id, text="outgoing")
    assert bot.ok("getUpdates") == []


def test_send_after_stop_then_restart(bot, chat, operator):
    operator("userStop", user_id=chat.user_id, bot_id=bot.id)
    response = bot.call("sendMessage", {"chat_id": chat.chat_id, "text": "x"})
    assert_failure(response, 403, "BOT_NOT_STARTED")
    operator("userStart", user_id=chat.user_id, bot_id=bot.id)
    assert bot.ok("sendMessage", chat_id=chat.chat_id, text="x")["text"] == "x"
