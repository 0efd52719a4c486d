"""sendCard: a card message, with optional buttons and reply."""
from __future__ import annotations

from app.api.registry import Call, api_method
from app.domain.cards import Card, send_card
from app.domain.keyboards import ReplyMarkup
from app.limits import SEND
from app.validation import ChatId, MessageId, ParseMode, StrictSchema


class SendCardSchema(StrictSchema):
    chat_id = ChatId(required=True)
    card = Card(required=True)
    reply_markup = ReplyMarkup()
    reply_to_message_id = MessageId()
    parse_mode = ParseMode()


@api_method("sendCard", SendCardSchema(), buckets=(SEND,))
def send_card_method(call: Call) -> dict:
    p = call.params
    return send_card(call.conn, call.bot.id, p["chat_id"], p["card"], p.get("reply_markup"),
                     p.get("reply_to_message_id"))
