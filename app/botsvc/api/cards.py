"""sendCard: a card message, with optional buttons and reply."""
from __future__ import annotations

from botsvc.api.registry import Call, api_method
from botsvc.api.sending import REPLY_ERRORS
from botsvc.catalogue import results
from botsvc.catalogue.markup import Card, ReplyMarkup
from botsvc.catalogue.validation import ChatId, MessageId, ParseMode, StrictSchema
from botsvc.domain.sending import send_card, send_card_to_chats
from botsvc.limits import SEND


class SendCardSchema(StrictSchema):
    chat_id = ChatId(required=True)
    card = Card(required=True)
    reply_markup = ReplyMarkup()
    reply_to_message_id = MessageId()
    parse_mode = ParseMode()


def send_card_to_many(call: Call, chats: list) -> list[dict]:
    p = call.params
    return send_card_to_chats(call.conn, call.bot.id, chats, p["card"],
                              reply_markup=p.get("reply_markup"))


@api_method("sendCard", SendCardSchema(), buckets=(SEND,), result=results.Message,
            errors=REPLY_ERRORS, summary="Send a card (info, product, status or receipt)",
            send_to_many=send_card_to_many, reaction="send")
def send_card_method(call: Call) -> dict:
    p = call.params
    return send_card(call.conn, call.bot.id, p["chat_id"], p["card"],
                     reply_to_message_id=p.get("reply_to_message_id"),
                     reply_markup=p.get("reply_markup"))
