"""Cards: a structured message (info, product, status or receipt). A receipt
card is display only; nothing here performs a payment.

The ``Card`` field is shared by sendCard, editMessageCard and broadcasts of
sendCard; ``send_card`` is the one send path for all of them.
"""
from __future__ import annotations

import sqlite3

from marshmallow import fields, validate

from app.domain import messages
from app.domain.chats import require_active_chat
from app.validation import Str, StrictSchema, Text

CARD_TYPES = ("info", "product", "status", "receipt")
TITLE_MAX_BYTES = 256
TEXT_MAX_BYTES = 8192
SUBTITLE_MAX_BYTES = 512
MAX_FIELDS = 12
LABEL_MAX_BYTES = 128
VALUE_MAX_BYTES = 1024


class CardFieldSchema(StrictSchema):
    label = Text(min_bytes=1, max_bytes=LABEL_MAX_BYTES, required=True)
    value = Text(min_bytes=1, max_bytes=VALUE_MAX_BYTES, required=True)


class CardSchema(StrictSchema):
    type = Str(required=True, validate=[validate.OneOf(
        CARD_TYPES, error=f"must be one of {', '.join(CARD_TYPES)}")])
    title = Text(min_bytes=1, max_bytes=TITLE_MAX_BYTES, required=True)
    text = Text(max_bytes=TEXT_MAX_BYTES)
    subtitle = Text(max_bytes=SUBTITLE_MAX_BYTES)
    fields = fields.List(fields.Nested(CardFieldSchema), validate=[validate.Length(
        max=MAX_FIELDS, error=f"at most {MAX_FIELDS} fields")])


def Card(**kwargs) -> fields.Nested:
    """The complete Card object; errors name ``card`` with the path inside it."""
    return fields.Nested(CardSchema, **kwargs)


def send_card(conn: sqlite3.Connection, bot_id: int, chat_id: str, card: dict,
              reply_markup: dict | None = None,
              reply_to_message_id: int | None = None) -> dict:
    """The bot sends a validated card to an active chat; returns the Message."""
    chat = require_active_chat(conn, bot_id, chat_id)
    return messages.send_message(conn, bot_id, chat, type="card",
                                 content={"card": card, "reply_markup": reply_markup},
                                 reply_to_message_id=reply_to_message_id)
