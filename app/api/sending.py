"""Sending: sendMessage (media, card and callback methods join this group)."""
from __future__ import annotations

from app.api.registry import Call, api_method
from app.domain import messages
from app.domain.chats import require_active_chat
from app.domain.keyboards import ReplyMarkup
from app.limits import SEND
from app.validation import ChatId, MessageId, ParseMode, StrictSchema, Text

TEXT_MAX_BYTES = 16384


class SendMessageSchema(StrictSchema):
    chat_id = ChatId(required=True)
    text = Text(min_bytes=1, max_bytes=TEXT_MAX_BYTES, required=True)
    parse_mode = ParseMode()
    reply_markup = ReplyMarkup()
    reply_to_message_id = MessageId()


def send_text(conn, bot_id: int, chat_id: str, text: str,
              reply_to_message_id: int | None = None, reply_markup: dict | None = None) -> dict:
    """Domain entry for a text message (used by sendMessage and by broadcasts)."""
    chat = require_active_chat(conn, bot_id, chat_id)
    return messages.send_message(conn, bot_id, chat, type="text",
                                 content={"text": text, "reply_markup": reply_markup},
                                 reply_to_message_id=reply_to_message_id)


@api_method("sendMessage", SendMessageSchema(), buckets=(SEND,))
def send_message(call: Call) -> dict:
    p = call.params
    return send_text(call.conn, call.bot.id, p["chat_id"], p["text"],
                     p.get("reply_to_message_id"), p.get("reply_markup"))
