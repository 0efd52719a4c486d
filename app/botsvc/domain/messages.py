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

from botsvc.clock import now
from botsvc.domain import chat_events
from botsvc.domain.keyboards import stored_keyboard
from botsvc.errors import ApiError, ErrorCode
from botsvc.jsontext import dumps

CONTENT_KEYS = ("text", "caption", "media", "card", "reply_markup")
# The SET clause that turns a message into a tombstone (migration 0006 did the
# same to the rows deleted before it).
TOMBSTONE = ("type = 'deleted', content = '{}', reply_to_message_id = NULL,"
             " media_group_id = NULL, edit_date = NULL")
HISTORY_BATCH = 500
# Above every message_id (SQLite integers are 64-bit): "no upper bound" for a page.
NO_MESSAGE_ID_ABOVE = 2**63 - 1


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


def shows_file(conn: sqlite3.Connection, bot_id: int, chat: sqlite3.Row, message_id: int,
               file_id: str) -> bool:
    """Whether message ``message_id`` of ``chat``, not deleted, shows this file
    now (an edit may have replaced it). One primary-key read."""
    row = find_message(conn, bot_id, chat, message_id)
    if row is None or row["deleted_at"] is not None:
        return False
    return (json.loads(row["content"]).get("media") or {}).get("file_id") == file_id


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


def newest_message_id(conn: sqlite3.Connection, chat: sqlite3.Row) -> int:
    """The chat's newest message_id, deleted or not (0 for none)."""
    row = conn.execute("SELECT MAX(message_id) FROM messages WHERE chat_ref = ?",
                       (chat["id"],)).fetchone()
    return row[0] or 0


def messages_after(conn: sqlite3.Connection, chat: sqlite3.Row, message_id: int,
                   limit: int) -> list[dict]:
    """The chat's visible messages newer than ``message_id``, oldest first,
    at most ``limit`` (the oldest of them)."""
    rows = conn.execute(
        "SELECT * FROM messages WHERE chat_ref = ? AND message_id > ? AND deleted_at IS NULL"
        " ORDER BY message_id LIMIT ?", (chat["id"], message_id, limit))
    return [render(row, chat["chat_id"]) for row in rows]


def find_shown(conn: sqlite3.Connection, bot_id: int, chat: sqlite3.Row,
               message_id: int) -> dict | None:
    """Message ``message_id`` as the chat's user sees it now, or None when it
    is deleted or not a message of the chat."""
    row = find_message(conn, bot_id, chat, message_id)
    if row is None or row["deleted_at"] is not None:
        return None
    return render(row, chat["chat_id"])


def chat_page(conn: sqlite3.Connection, chat: sqlite3.Row, limit: int,
              before_message_id: int | None = None) -> tuple[list[dict], bool]:
    """The newest ``limit`` messages the user sees (edits applied, deleted ones
    gone), older than ``before_message_id`` when given, oldest first; and
    whether older ones exist. One range of ``messages_by_chat`` read from its
    newest end, so the cost follows ``limit``, not the chat's history."""
    rows = conn.execute(
        "SELECT * FROM messages WHERE chat_ref = ? AND message_id < ? AND deleted_at IS NULL"
        " ORDER BY message_id DESC LIMIT ?",
        (chat["id"], NO_MESSAGE_ID_ABOVE if before_message_id is None else before_message_id,
         limit + 1)).fetchall()
    return [render(row, chat["chat_id"]) for row in reversed(rows[:limit])], len(rows) > limit


def remove_history_before(conn: sqlite3.Connection, cutoff: int,
                          batch: int = HISTORY_BATCH) -> int:
    """Remove up to ``batch`` messages dated before ``cutoff`` (deleted or
    not), the callback queries clicked before it and the chat events (with
    the updates they journal) of before it; returns how many rows
    went. One short write per call: the caller loops, each in its own
    transaction, so other writers get the lock in between."""
    queries = conn.execute(
        "DELETE FROM callback_queries WHERE id IN (SELECT id FROM callback_queries"
        " WHERE created_at < ? LIMIT ?)", (cutoff, batch)).rowcount
    removed = conn.execute(
        "DELETE FROM messages WHERE (bot_id, message_id) IN (SELECT bot_id, message_id"
        " FROM messages WHERE date < ? LIMIT ?)", (cutoff, batch)).rowcount
    return queries + removed + chat_events.remove_before(conn, cutoff, batch)
