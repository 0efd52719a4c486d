"""Messages of both directions, in one per-bot message_id namespace.

A message's content (text, caption, media, card, reply_markup) is kept as one
JSON object, so every message type renders the same way. A deleted message
is a tombstone: its id, chat, sender side, date and ``deleted_at`` (what
deleteMessage's idempotence and MESSAGE_NOT_FOUND need), nothing of what it
said. History older than the retention setting is removed whole.
"""
from __future__ import annotations

import json
import sqlite3

from app.clock import now
from app.domain.keyboards import stored_keyboard
from app.errors import ApiError, ErrorCode
from app.jsontext import dumps

CONTENT_KEYS = ("text", "caption", "media", "card", "reply_markup")
# The SET clause that turns a message into a tombstone (migration 0006 did the
# same to the rows deleted before it).
TOMBSTONE = ("type = 'deleted', content = '{}', reply_to_message_id = NULL,"
             " media_group_id = NULL, edit_date = NULL")
HISTORY_BATCH = 500


def next_message_id(conn: sqlite3.Connection, bot_id: int) -> int:
    return reserve_message_ids(conn, bot_id, 1)


def reserve_message_ids(conn: sqlite3.Connection, bot_id: int, count: int) -> int:
    """Take ``count`` consecutive message_ids of the bot; returns the first."""
    last = conn.execute("UPDATE bots SET last_message_id = last_message_id + ? WHERE id = ?"
                        " RETURNING last_message_id", (count, bot_id)).fetchone()[0]
    return last - count + 1


def render(row: sqlite3.Row | dict, chat_id: str) -> dict:
    """A Message as the contract shapes it; absent optional fields are omitted."""
    message = {"message_id": row["message_id"], "chat": {"id": chat_id, "type": "private"},
               "date": row["date"], "type": row["type"], "from_bot": bool(row["from_bot"])}
    content = json.loads(row["content"]) if isinstance(row["content"], str) else row["content"]
    for key in CONTENT_KEYS:
        if content.get(key) is not None:
            message[key] = content[key]
    for key in ("reply_to_message_id", "media_group_id", "edit_date"):
        if row[key] is not None:
            message[key] = row[key]
    return message


def insert_message(conn: sqlite3.Connection, bot_id: int, chat: sqlite3.Row, *,
                   from_bot: bool, type: str, content: dict,
                   reply_to_message_id: int | None = None,
                   media_group_id: str | None = None) -> dict:
    [message] = insert_messages(conn, bot_id, [chat], from_bot=from_bot, type=type,
                                content=content, reply_to_message_id=reply_to_message_id,
                                media_group_id=media_group_id)
    return message


def insert_messages(conn: sqlite3.Connection, bot_id: int, chats: list[sqlite3.Row], *,
                    from_bot: bool, type: str, content: dict,
                    reply_to_message_id: int | None = None,
                    media_group_id: str | None = None) -> list[dict]:
    """The same message into each of ``chats``, with consecutive message_ids
    in their order (a broadcast's batch takes them in one statement)."""
    first = reserve_message_ids(conn, bot_id, len(chats))
    date, stored = now(), dumps(content)
    conn.executemany(
        "INSERT INTO messages (bot_id, message_id, chat_ref, from_bot, type, date, content,"
        " reply_to_message_id, media_group_id) VALUES (?, ?, ?, ?, ?, ?, ?, ?, ?)",
        [(bot_id, first + i, chat["id"], int(from_bot), type, date, stored,
          reply_to_message_id, media_group_id) for i, chat in enumerate(chats)])
    return [render({"message_id": first + i, "from_bot": int(from_bot), "type": type,
                    "date": date, "content": content,
                    "reply_to_message_id": reply_to_message_id,
                    "media_group_id": media_group_id, "edit_date": None}, chat["chat_id"])
            for i, chat in enumerate(chats)]


def message_not_found(field: str = "message_id") -> ApiError:
    return ApiError(ErrorCode.MESSAGE_NOT_FOUND, "Message not found", field=field)


def find_message(conn: sqlite3.Connection, bot_id: int, chat: sqlite3.Row,
                 message_id: int) -> sqlite3.Row | None:
    """A message of this bot in this chat, deleted or not."""
    return conn.execute(
        "SELECT * FROM messages WHERE bot_id = ? AND message_id = ? AND chat_ref = ?",
        (bot_id, message_id, chat["id"])).fetchone()


def own_message(conn: sqlite3.Connection, bot_id: int, chat: sqlite3.Row, message_id: int,
                field: str = "message_id") -> sqlite3.Row:
    """A message this bot sent in ``chat`` and has not deleted: what it may edit,
    and what a user may click."""
    row = find_message(conn, bot_id, chat, message_id)
    if row is None or not row["from_bot"] or row["deleted_at"] is not None:
        raise message_not_found(field)
    return row


def require_reply_target(conn: sqlite3.Connection, bot_id: int, chat: sqlite3.Row,
                         message_id: int, field: str = "reply_to_message_id") -> sqlite3.Row:
    """A received or sent message in the same bot and chat, not deleted."""
    row = find_message(conn, bot_id, chat, message_id)
    if row is None or row["deleted_at"] is not None:
        raise message_not_found(field)
    return row


def send_message(conn: sqlite3.Connection, bot_id: int, chat: sqlite3.Row, *, type: str,
                 content: dict, reply_to_message_id: int | None = None,
                 media_group_id: str | None = None) -> dict:
    """The bot sends one message to an active chat (checked by the caller)."""
    if reply_to_message_id is not None:
        require_reply_target(conn, bot_id, chat, reply_to_message_id)
    [message] = send_messages(conn, bot_id, [chat], type=type, content=content,
                              reply_to_message_id=reply_to_message_id,
                              media_group_id=media_group_id)
    return message


def send_messages(conn: sqlite3.Connection, bot_id: int, chats: list[sqlite3.Row], *,
                  type: str, content: dict, reply_to_message_id: int | None = None,
                  media_group_id: str | None = None) -> list[dict]:
    """The bot sends the same message to each of ``chats`` (active, and the
    reply target checked, by the caller): what ``send_message`` does for one."""
    if content.get("reply_markup") is not None:
        # Callers that skip the request schema (broadcast deliveries) store the
        # same keyboard a direct send would: no empty rows, none if no button.
        content = {**content, "reply_markup": stored_keyboard(content["reply_markup"])}
    return insert_messages(conn, bot_id, chats, from_bot=True, type=type, content=content,
                           reply_to_message_id=reply_to_message_id,
                           media_group_id=media_group_id)


def chat_history(conn: sqlite3.Connection, chat: sqlite3.Row) -> list[dict]:
    """The chat as the user sees it now: edits applied, deleted messages gone."""
    rows = conn.execute("SELECT * FROM messages WHERE chat_ref = ? AND deleted_at IS NULL"
                        " ORDER BY message_id", (chat["id"],))
    return [render(row, chat["chat_id"]) for row in rows]


def remove_history_before(conn: sqlite3.Connection, cutoff: int,
                          batch: int = HISTORY_BATCH) -> int:
    """Remove up to ``batch`` messages dated before ``cutoff`` (deleted or
    not) and the callback queries clicked before it; returns how many rows
    went. One short write per call: the caller loops, each in its own
    transaction, so other writers get the lock in between."""
    queries = conn.execute(
        "DELETE FROM callback_queries WHERE id IN (SELECT id FROM callback_queries"
        " WHERE created_at < ? LIMIT ?)", (cutoff, batch)).rowcount
    removed = conn.execute(
        "DELETE FROM messages WHERE (bot_id, message_id) IN (SELECT bot_id, message_id"
        " FROM messages WHERE date < ? LIMIT ?)", (cutoff, batch)).rowcount
    return queries + removed
