"""The bot's text and card messages: the one send path of sendMessage and
sendCard, of their broadcasts, and of tests. (Media messages are in
media_messages.) A receipt card is display only; nothing here performs a
payment.
"""
from __future__ import annotations

import sqlite3

from botsvc.domain import messages
from botsvc.domain.chats import require_active_chat


def send_text(conn: sqlite3.Connection, bot_id: int, chat_id: str, text: str, *,
              reply_to_message_id: int | None = None,
              reply_markup: dict | None = None) -> dict:
    """The bot sends a text message to an active chat; returns the Message."""
    return _send(conn, bot_id, chat_id, "text", {"text": text, "reply_markup": reply_markup},
                 reply_to_message_id)


def send_card(conn: sqlite3.Connection, bot_id: int, chat_id: str, card: dict, *,
              reply_to_message_id: int | None = None,
              reply_markup: dict | None = None) -> dict:
    """The bot sends a validated card to an active chat; returns the Message."""
    return _send(conn, bot_id, chat_id, "card", {"card": card, "reply_markup": reply_markup},
                 reply_to_message_id)


def send_text_to_chats(conn: sqlite3.Connection, bot_id: int, chats: list[sqlite3.Row],
                       text: str, *, reply_markup: dict | None = None) -> list[dict]:
    """send_text to each of ``chats``, active ones read in the caller's
    transaction (a broadcast's batch); the Messages in their order."""
    return messages.send_messages(conn, bot_id, chats, type="text",
                                  content={"text": text, "reply_markup": reply_markup})


def send_card_to_chats(conn: sqlite3.Connection, bot_id: int, chats: list[sqlite3.Row],
                       card: dict, *, reply_markup: dict | None = None) -> list[dict]:
    """send_card to each of ``chats``, as send_text_to_chats."""
    return messages.send_messages(conn, bot_id, chats, type="card",
                                  content={"card": card, "reply_markup": reply_markup})


def _send(conn: sqlite3.Connection, bot_id: int, chat_id: str, type: str, content: dict,
          reply_to_message_id: int | None) -> dict:
    chat = require_active_chat(conn, bot_id, chat_id)
    return messages.send_message(conn, bot_id, chat, type=type, content=content,
                                 reply_to_message_id=reply_to_message_id)
