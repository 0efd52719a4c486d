"""Sending: sendMessage (media, card and callback methods have their own
modules: media, cards, callbacks)."""
from __future__ import annotations

from botsvc.api.registry import Call, api_method
from botsvc.catalogue import results
from botsvc.catalogue.markup import ReplyMarkup
from botsvc.catalogue.validation import ChatId, MessageId, MessageText, ParseMode, StrictSchema
from botsvc.domain.sending import send_text, send_text_to_chats
from botsvc.errors import ErrorCode
from botsvc.limits import SEND

# What a send to one chat can meet besides its parameters.
SEND_ERRORS = (ErrorCode.CHAT_NOT_FOUND, ErrorCode.BOT_NOT_STARTED, ErrorCode.BOT_BLOCKED)
# ... and a reply target that is not there.
REPLY_ERRORS = (*SEND_ERRORS, ErrorCode.MESSAGE_NOT_FOUND)


class SendMessageSchema(StrictSchema):
    chat_id = ChatId(required=True)
    text = MessageText(required=True)
    parse_mode = ParseMode()
    reply_markup = ReplyMarkup()
    reply_to_message_id = MessageId()


def send_message_to_many(call: Call, chats: list) -> list[dict]:
    p = call.params
    return send_text_to_chats(call.conn, call.bot.id, chats, p["text"],
                              reply_markup=p.get("reply_markup"))


@api_method("sendMessage", SendMessageSchema(), buckets=(SEND,), result=results.Message,
            errors=REPLY_ERRORS, summary="Send a text message to an active chat",
            send_to_many=send_message_to_many, reaction="send")
def send_message(call: Call) -> dict:
    p = call.params
    return send_text(call.conn, call.bot.id, p["chat_id"], p["text"],
                     reply_to_message_id=p.get("reply_to_message_id"),
                     reply_markup=p.get("reply_markup"))
