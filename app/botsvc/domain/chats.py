"""Memberships (one chat per bot and user) and their state machine.

A chat_id exists for a bot only after that user's first Start of that bot,
and is random per (bot, user) pair: never derived from the user.
"""
from __future__ import annotations

import secrets
import sqlite3

from botsvc.clock import now
from botsvc.contract import CHAT_ID_HEX_DIGITS, CHAT_ID_PREFIX, START_PARAMETER
from botsvc.db import transaction
from botsvc.domain import callbacks, chat_events, messages
from botsvc.domain.bots import require_bot, require_user
from botsvc.domain.updates import enqueue_update
from botsvc.errors import ApiError, ErrorCode, invalid


def new_chat_id() -> str:
    return CHAT_ID_PREFIX + secrets.token_hex(CHAT_ID_HEX_DIGITS // 2)


def render_chat(row: sqlite3.Row) -> dict:
    chat = {"id": row["chat_id"], "type": "private", "status": row["status"],
            "started_at": row["started_at"]}
    if row["stopped_at"] is not None:
        chat["stopped_at"] = row["stopped_at"]
    return chat


def chat_not_found(field: str = "chat_id") -> ApiError:
    return ApiError(ErrorCode.CHAT_NOT_FOUND, "Chat not found", field=field)


def require_chat(conn: sqlite3.Connection, bot_id: int, chat_id: str,
                 field: str = "chat_id") -> sqlite3.Row:
    """The bot's own chat; another bot's chat_id is as unknown as an invented one."""
    row = conn.execute("SELECT * FROM chats WHERE chat_id = ? AND bot_id = ?",
                       (chat_id, bot_id)).fetchone()
    if row is None:
        raise chat_not_found(field)
    return row


def check_active(row: sqlite3.Row) -> None:
    if row["status"] == "active":
        return
    if row["blocked"]:
        raise ApiError(ErrorCode.BOT_BLOCKED, "The user blocked this bot",
                       chat_id=row["chat_id"])
    raise ApiError(ErrorCode.BOT_NOT_STARTED, "The user has not started this bot",
                   chat_id=row["chat_id"])


def require_active_chat(conn: sqlite3.Connection, bot_id: int, chat_id: str,
                        field: str = "chat_id") -> sqlite3.Row:
    """A chat the bot may send to or edit in right now."""
    row = require_chat(conn, bot_id, chat_id, field)
    check_active(row)
    return row


def find_user_chat(conn: sqlite3.Connection, bot_id: int, user_id: int) -> sqlite3.Row | None:
    """The user's chat with the bot, or None before their first Start."""
    return conn.execute("SELECT * FROM chats WHERE bot_id = ? AND user_id = ?",
                        (bot_id, user_id)).fetchone()


# Unread messages are counted up to this many (a list shows "99+").
UNREAD_COUNTED = 100


def chats_of_user(conn: sqlite3.Connection, user_id: int) -> dict[int, dict]:
    """Every chat of the user, by bot id: ``{chat: row, last: Message or None,
    unread}``: the newest message the user sees, and how many of the bot's
    messages they have not read (at most UNREAD_COUNTED). One statement; each
    figure is the end of an index range (``chats_by_user``, ``messages_by_chat``)."""
    rows = conn.execute(
        "SELECT c.*, m.message_id, m.date, m.type, m.from_bot, m.content,"
        " m.reply_to_message_id, m.media_group_id, m.edit_date,"
        " (SELECT COUNT(*) FROM (SELECT 1 FROM messages u WHERE u.chat_ref = c.id"
        "  AND u.message_id > c.read_message_id AND u.from_bot = 1 AND u.deleted_at IS NULL"
        "  LIMIT ?)) AS unread"
        " FROM chats c LEFT JOIN messages m ON m.bot_id = c.bot_id AND m.message_id ="
        " (SELECT MAX(message_id) FROM messages WHERE chat_ref = c.id AND deleted_at IS NULL)"
        " WHERE c.user_id = ?", (UNREAD_COUNTED, user_id))
    return {row["bot_id"]: {"chat": row, "unread": row["unread"],
                            "last": None if row["message_id"] is None
                            else messages.render(row, row["chat_id"])} for row in rows}


def mark_read(conn: sqlite3.Connection, bot_id: int, user_id: int, message_id: int) -> None:
    """The user has read the chat up to ``message_id`` (a read marker only
    moves forward, and not past the chat's newest message)."""
    with transaction(conn):
        row = user_chat(conn, bot_id, user_id)
        newest = messages.newest_message_id(conn, row)
        conn.execute("UPDATE chats SET read_message_id = ? WHERE id = ? AND read_message_id < ?",
                     (min(message_id, newest), row["id"], min(message_id, newest)))


def user_chat(conn: sqlite3.Connection, bot_id: int, user_id: int) -> sqlite3.Row:
    require_bot(conn, bot_id)
    require_user(conn, user_id)
    row = find_user_chat(conn, bot_id, user_id)
    if row is None:
        raise chat_not_found("bot_id")
    return row


def user_start(conn: sqlite3.Connection, bot_id: int, user_id: int,
               start_parameter: str | None = None) -> dict:
    """The user presses Start: membership becomes active, and the bot gets one
    update holding the ``/start`` message and the membership."""
    return _start(conn, bot_id, user_id, start_parameter)[0]


def _start(conn, bot_id: int, user_id: int, start_parameter: str | None) -> tuple[dict, dict]:
    if start_parameter is not None and not START_PARAMETER.match(start_parameter):
        raise invalid("start_parameter",
                      "start_parameter must be 1 to 64 ASCII letters, digits, _ or -")
    with transaction(conn):
        require_bot(conn, bot_id)
        require_user(conn, user_id)
        at = now()
        row = find_user_chat(conn, bot_id, user_id)
        kind = ("start" if row is None or row["status"] == "active"
                else "unblock" if row["blocked"] else "restart")
        if row is None:
            conn.execute(
                "INSERT INTO chats (chat_id, bot_id, user_id, status, started_at)"
                " VALUES (?, ?, ?, 'active', ?)", (new_chat_id(), bot_id, user_id, at))
        elif row["status"] != "active":
            conn.execute("UPDATE chats SET status = 'active', blocked = 0, started_at = ?,"
                         " stopped_at = NULL WHERE id = ?", (at, row["id"]))
        row = find_user_chat(conn, bot_id, user_id)
        text = "/start" if start_parameter is None else f"/start {start_parameter}"
        message = messages.insert_message(conn, bot_id, row, from_bot=False, type="text",
                                          content={"text": text})
        membership = {"chat_id": row["chat_id"], "status": "active"}
        if start_parameter is not None:
            membership["start_parameter"] = start_parameter
        update = {"message": message, "membership": membership}
        update_id = enqueue_update(conn, bot_id, update)
        chat_events.record(conn, row, kind, message_id=message["message_id"],
                           update_id=update_id, update=update)
    return {"chat_id": row["chat_id"], "update_id": update_id}, message


def user_stop(conn: sqlite3.Connection, bot_id: int, user_id: int) -> None:
    """The user presses Stop: sending and edits become forbidden. Stopping a
    chat that is not active changes nothing."""
    with transaction(conn):
        row = user_chat(conn, bot_id, user_id)
        if row["status"] == "active":
            _stop(conn, bot_id, row)


def _stop(conn, bot_id: int, row: sqlite3.Row) -> dict:
    conn.execute("UPDATE chats SET status = 'stopped', stopped_at = ? WHERE id = ?",
                 (now(), row["id"]))
    message = messages.insert_message(conn, bot_id, row, from_bot=False, type="text",
                                      content={"text": "/stop"})
    update = {"message": message, "membership": {"chat_id": row["chat_id"],
                                                 "status": "stopped"}}
    update_id = enqueue_update(conn, bot_id, update)
    chat_events.record(conn, row, "stop", message_id=message["message_id"],
                       update_id=update_id, update=update)
    return message


def user_block(conn: sqlite3.Connection, bot_id: int, user_id: int) -> None:
    """The user blocks the bot: a membership-only update, and BOT_BLOCKED on sends."""
    with transaction(conn):
        row = user_chat(conn, bot_id, user_id)
        if row["blocked"]:
            return
        was_active = row["status"] == "active"
        conn.execute("UPDATE chats SET status = 'stopped', blocked = 1,"
                     " stopped_at = COALESCE(stopped_at, ?) WHERE id = ?", (now(), row["id"]))
        update = update_id = None
        if was_active:
            update = {"membership": {"chat_id": row["chat_id"], "status": "stopped",
                                     "reason": "blocked"}}
            update_id = enqueue_update(conn, bot_id, update)
        chat_events.record(conn, row, "block", update_id=update_id, update=update)


def user_send_message(conn: sqlite3.Connection, bot_id: int, user_id: int, text: str,
                      reply_to_message_id: int | None = None) -> dict:
    """A message from the user to the bot. ``/start [param]`` and ``/stop`` are
    the Start and Stop commands; other messages need an active membership."""
    command, _, argument = text.partition(" ")
    if command == "/start":
        return _start(conn, bot_id, user_id, argument or None)[1]
    if command == "/stop" and not argument:
        # A message like any other: a user who stopped or blocked the bot
        # cannot reach it (userStop, the button, is the idempotent way).
        with transaction(conn):
            row = user_chat(conn, bot_id, user_id)
            check_active(row)
            return _stop(conn, bot_id, row)
    with transaction(conn):
        row = user_chat(conn, bot_id, user_id)
        check_active(row)
        if reply_to_message_id is not None:
            messages.require_reply_target(conn, bot_id, row, reply_to_message_id)
        message = messages.insert_message(conn, bot_id, row, from_bot=False, type="text",
                                          content={"text": text},
                                          reply_to_message_id=reply_to_message_id)
        user_message_update(conn, bot_id, row, message)
    return message


def user_message_update(conn: sqlite3.Connection, bot_id: int, chat: sqlite3.Row,
                        message: dict) -> int:
    """Queue the update of a message the user sent (and journal it)."""
    update = {"message": message}
    update_id = enqueue_update(conn, bot_id, update)
    chat_events.record(conn, chat, "message", message_id=message["message_id"],
                       update_id=update_id, update=update)
    return update_id


def user_click_button(conn: sqlite3.Connection, bot_id: int, user_id: int, message_id: int,
                      callback_data: str) -> dict:
    """The user clicks a callback button on one of the bot's messages; the bot
    gets a callback_query update. Only an active member can click, as only an
    active member can message the bot."""
    with transaction(conn):
        row = user_chat(conn, bot_id, user_id)
        check_active(row)
        query_id = callbacks.click(conn, bot_id, row, message_id, callback_data)
    return {"callback_query_id": query_id}


def user_view(conn: sqlite3.Connection, bot_id: int, user_id: int, limit: int,
              before_message_id: int | None = None) -> dict:
    """userGetChat: one page of the chat as the user sees it, newest first
    chosen, oldest first listed. ``before_message_id`` must be
    a message of this chat; a deleted one still is (its tombstone keeps its
    place), so a page boundary stays valid when the message it names is
    deleted meanwhile."""
    row = user_chat(conn, bot_id, user_id)
    if before_message_id is not None and messages.find_message(
            conn, bot_id, row, before_message_id) is None:
        raise invalid("before_message_id",
                      f"Message {before_message_id} is not a message of this chat")
    page, has_more = messages.chat_page(conn, row, limit, before_message_id)
    return {"chat_id": row["chat_id"], "status": row["status"], "messages": page,
            "callback_answers": callbacks.answers_seen(
                conn, row, [message["message_id"] for message in page]),
            "has_more": has_more}
