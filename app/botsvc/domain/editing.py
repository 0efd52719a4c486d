"""Editing and deleting the bot's own messages.

The checks are separate functions so every edit method (text, card, reply
markup here; caption and media in the media group) applies them the same way:

1. ``require_editable_chat``: the bot's own chat with active membership
   (CHAT_NOT_FOUND, then BOT_NOT_STARTED or BOT_BLOCKED);
2. ``messages.own_message``: a message this bot sent in that chat and has not deleted
   (MESSAGE_NOT_FOUND otherwise: user messages and other bots' messages
   included);
3. ``require_type``: the method applies to this message's type
   (INVALID_PARAMETER naming ``message_id``);
4. ``apply_edit``: new content, ``edit_date`` set, the edited Message returned.

Deleting needs no active membership: a bot may clean up after Stop or block.
"""
from __future__ import annotations

import json
import sqlite3

from botsvc.clock import now
from botsvc.domain import messages
from botsvc.domain.chats import require_active_chat, require_chat
from botsvc.errors import ApiError, ErrorCode, invalid
from botsvc.jsontext import dumps

# The default for an edit's reply_markup: leave the message's buttons as they are
# (``None`` removes them).
UNCHANGED = object()


def require_editable_chat(conn: sqlite3.Connection, bot_id: int, chat_id: str) -> sqlite3.Row:
    """The bot's chat, in which edits are allowed now (active membership)."""
    return require_active_chat(conn, bot_id, chat_id)


def require_type(row: sqlite3.Row, types: tuple[str, ...], method: str,
                 field: str = "message_id") -> None:
    if row["type"] not in types:
        raise invalid(field, f"{method} cannot edit message {row['message_id']}"
                             f" of type {row['type']} (only {', '.join(types)})")


def check_markup_allowed(row: sqlite3.Row, reply_markup) -> None:
    """A media group has no buttons in this version of the contract."""
    if row["media_group_id"] is not None and reply_markup not in (None, UNCHANGED):
        raise invalid("reply_markup", "Messages of a media group cannot have buttons")


def apply_edit(conn: sqlite3.Connection, chat: sqlite3.Row, row: sqlite3.Row,
               changes: dict, *, reply_markup=UNCHANGED, type: str | None = None) -> dict:
    """Replace content keys (a ``None`` value removes the key), stamp
    ``edit_date`` and return the Message as it is now."""
    content = json.loads(row["content"])
    if reply_markup is not UNCHANGED:
        changes = {**changes, "reply_markup": reply_markup}
    content.update(changes)
    content = {key: value for key, value in content.items() if value is not None}
    edited = conn.execute(
        "UPDATE messages SET content = ?, type = ?, edit_date = ?"
        " WHERE bot_id = ? AND message_id = ? RETURNING *",
        (dumps(content), type or row["type"], now(), row["bot_id"], row["message_id"])
    ).fetchone()
    return messages.render(edited, chat["chat_id"])


def edit_message_text(conn: sqlite3.Connection, bot_id: int, chat_id: str, message_id: int,
                      text: str, reply_markup=UNCHANGED) -> dict:
    chat = require_editable_chat(conn, bot_id, chat_id)
    row = messages.own_message(conn, bot_id, chat, message_id)
    require_type(row, ("text",), "editMessageText")
    return apply_edit(conn, chat, row, {"text": text}, reply_markup=reply_markup)


def edit_message_card(conn: sqlite3.Connection, bot_id: int, chat_id: str, message_id: int,
                      card: dict, reply_markup=UNCHANGED) -> dict:
    chat = require_editable_chat(conn, bot_id, chat_id)
    row = messages.own_message(conn, bot_id, chat, message_id)
    require_type(row, ("card",), "editMessageCard")
    return apply_edit(conn, chat, row, {"card": card}, reply_markup=reply_markup)


def edit_message_reply_markup(conn: sqlite3.Connection, bot_id: int, chat_id: str,
                              message_id: int, reply_markup: dict | None) -> dict:
    """Any own message's buttons; ``None`` (an empty keyboard) removes them."""
    chat = require_editable_chat(conn, bot_id, chat_id)
    row = messages.own_message(conn, bot_id, chat, message_id)
    check_markup_allowed(row, reply_markup)
    return apply_edit(conn, chat, row, {}, reply_markup=reply_markup)


def delete_message(conn: sqlite3.Connection, bot_id: int, chat_id: str,
                   message_id: int) -> None:
    """Delete one own message; already deleted is success again."""
    delete_messages(conn, bot_id, chat_id, [message_id], field="message_id")


def delete_messages(conn: sqlite3.Connection, bot_id: int, chat_id: str,
                    message_ids: list[int], field: str = "message_ids") -> None:
    """Delete own messages of one chat, all or none. Repeated ids and ids
    already deleted are accepted (deleting is idempotent); any id that is not
    a message this bot sent in this chat fails the whole call. What stays is
    a tombstone (``messages.TOMBSTONE``)."""
    chat = require_chat(conn, bot_id, chat_id)
    wanted = sorted(set(message_ids))
    marks = ",".join("?" * len(wanted))
    own = {row["message_id"] for row in conn.execute(
        f"SELECT message_id FROM messages WHERE bot_id = ? AND chat_ref = ? AND from_bot = 1"
        f" AND message_id IN ({marks})", (bot_id, chat["id"], *wanted))}
    missing = [message_id for message_id in wanted if message_id not in own]
    if missing:
        raise ApiError(ErrorCode.MESSAGE_NOT_FOUND,
                       f"Message {missing[0]} is not a message this bot sent in this chat",
                       field=field, message_id=missing[0])
    conn.execute(
        f"UPDATE messages SET deleted_at = ?, {messages.TOMBSTONE} WHERE bot_id = ?"
        f" AND deleted_at IS NULL AND message_id IN ({marks})", (now(), bot_id, *wanted))
