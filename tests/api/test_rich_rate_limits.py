"""Send methods take from the send limit; edits, deletes and callback answers
only from the general API limit."""
import pytest

CARD = {"type": "info", "title": "T"}


@pytest.fixture
def app(make_app):
    # One send per second: a second send at once is refused, whatever the method.
    return make_app(rate_sends_per_sec=1)


def test_send_card_uses_the_send_limit(bot, chat):
    bot.ok("sendMessage", chat_id=chat.chat_id, text="first")
    body = bot.error("sendCard", 429, "RATE_LIMITED", chat_id=chat.chat_id, card=CARD)
    assert body["parameters"]["retry_after"] >= 1


def test_send_message_after_send_card_is_limited(bot, chat):
    bot.ok("sendCard", chat_id=chat.chat_id, card=CARD)
    bot.error("sendMessage", 429, "RATE_LIMITED", chat_id=chat.chat_id, text="second")


def test_edits_deletes_and_answers_do_not_use_the_send_limit(bot, chat, operator):
    sent = bot.ok("sendCard", chat_id=chat.chat_id, card=CARD, reply_markup={
        "inline_keyboard": [[{"text": "x", "callback_data": "x"}]]})
    ref = {"chat_id": chat.chat_id, "message_id": sent["message_id"]}
    query_id = operator("userClickButton", user_id=chat.user_id, bot_id=bot.id,
                        message_id=sent["message_id"], callback_data="x")["callback_query_id"]
    bot.ok("editMessageCard", **ref, card={"type": "status", "title": "U"})
    bot.ok("editMessageReplyMarkup", **ref, reply_markup={"inline_keyboard": []})
    bot.ok("answerCallbackQuery", callback_query_id=query_id)
    bot.ok("deleteMessage", **ref)
    bot.ok("deleteMessages", chat_id=chat.chat_id, message_ids=[sent["message_id"]])
    bot.error("sendMessage", 429, "RATE_LIMITED", chat_id=chat.chat_id, text="still limited")
