"""reply_to_message_id on every send method that takes it: same bot, same
chat, not deleted; MESSAGE_NOT_FOUND otherwise."""
import pytest

CARD = {"type": "info", "title": "T"}


def send(bot, method: str, chat_id: str, **params):
    content = {"text": "hi"} if method == "sendMessage" else {"card": CARD}
    return bot.call(method, {"chat_id": chat_id, **content, **params})


def assert_reply_refused(response):
    body = response.get_json()
    assert (response.status_code, body["error_code"]) == (404, "MESSAGE_NOT_FOUND"), body
    assert body["parameters"]["field"] == "reply_to_message_id"


@pytest.mark.parametrize("method", ["sendMessage", "sendCard"])
def test_reply_to_a_received_or_sent_message_of_the_chat(bot, chat, operator, method):
    received = operator("userSendMessage", user_id=chat.user_id, bot_id=bot.id, text="question")
    reply = send(bot, method, chat.chat_id, reply_to_message_id=received["message_id"])
    assert reply.get_json()["result"]["reply_to_message_id"] == received["message_id"]
    own = reply.get_json()["result"]["message_id"]
    again = send(bot, method, chat.chat_id, reply_to_message_id=own)
    assert again.get_json()["result"]["reply_to_message_id"] == own


@pytest.mark.parametrize("method", ["sendMessage", "sendCard"])
def test_reply_to_a_message_of_another_chat_of_the_same_bot(bot, chat, start_chat, method):
    other = start_chat(bot)
    elsewhere = bot.ok("sendMessage", chat_id=other.chat_id, text="elsewhere")
    assert_reply_refused(send(bot, method, chat.chat_id,
                              reply_to_message_id=elsewhere["message_id"]))


@pytest.mark.parametrize("method", ["sendMessage", "sendCard"])
def test_reply_to_another_bots_message_id(bot, chat, new_bot, start_chat, method):
    other_bot = new_bot()
    other_chat = start_chat(other_bot, user_id=chat.user_id)
    for _ in range(5):
        foreign = other_bot.ok("sendMessage", chat_id=other_chat.chat_id, text="theirs")
    assert foreign["message_id"] > 2  # beyond every message_id of `bot`
    assert_reply_refused(send(bot, method, chat.chat_id,
                              reply_to_message_id=foreign["message_id"]))


@pytest.mark.parametrize("method", ["sendMessage", "sendCard"])
def test_reply_to_a_deleted_or_unknown_message(bot, chat, method):
    sent = bot.ok("sendMessage", chat_id=chat.chat_id, text="soon gone")
    assert bot.ok("deleteMessage", chat_id=chat.chat_id, message_id=sent["message_id"]) is True
    assert_reply_refused(send(bot, method, chat.chat_id, reply_to_message_id=sent["message_id"]))
    assert_reply_refused(send(bot, method, chat.chat_id, reply_to_message_id=999))


@pytest.mark.parametrize("method", ["sendMessage", "sendCard"])
@pytest.mark.parametrize("value", [0, -1, "1", 1.5, True])
def test_reply_to_message_id_is_a_positive_integer(bot, chat, method, value):
    response = send(bot, method, chat.chat_id, reply_to_message_id=value)
    body = response.get_json()
    assert (response.status_code, body["error_code"]) == (400, "INVALID_PARAMETER")
    assert body["parameters"]["field"] == "reply_to_message_id"


def test_a_refused_reply_sends_nothing(bot, chat, operator):
    assert_reply_refused(send(bot, "sendCard", chat.chat_id, reply_to_message_id=999))
    view = operator("userGetChat", user_id=chat.user_id, bot_id=bot.id)
    assert [m["type"] for m in view["messages"]] == ["text"]  # only /start
