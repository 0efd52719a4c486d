"""Memberships (one chat per bot and user) and their state machine.

A chat_id exists for a bot only after that user's first Start of that bot,
and is random per (bot, user) pair: never derived from the user.
"""
from __future__ import annotations

import secrets
import sqlite3

from app.clock import now
from app.contract import CHAT_ID_HEX_DIGITS, CHAT_ID_PREFIX, START_PARAMETER
from app.db import transaction
from app.domain import callbacks, messages
from app.domain.bots import require_bot, require_user
from app.domain.updates import enqueue_update
from app.errors import ApiError, ErrorCode, invalid


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


def user_chat(conn: sqlite3.Connection, bot_id: int, user_id: int) -> sqlite3.Row:
    require_bot(conn, bot_id)
    require_user(conn, user_id)
    row = conn.execute("SELECT * FROM chats WHERE bot_id = ? AND user_id = ?",
                       (bot_id, user_id)).fetchone()
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
        row = conn.execute("SELECT * FROM chats WHERE bot_id = ? AND user_id = ?",
                           (bot_id, user_id)).fetchone()
        if row is None:
            conn.execute(
                "INSERT INTO chats (chat_id, bot_id, user_id, status, started_at)"
                " VALUES (?, ?, ?, 'active', ?)", (new_chat_id(), bot_id, user_id, at))
        elif row["status"] != "active":
            conn.execute("UPDATE chats SET status = 'active', blocked = 0, started_at = ?,"
                         " stopped_at = NULL WHERE id = ?", (at, row["id"]))
        row = conn.execute("SELECT * FROM chats WHERE bot_id = ? AND user_id = ?",
                           (bot_id, user_id)).fetchone()
        text = "/start" if start_parameter is None else f"/start {start_parameter}"
        message = messages.insert_message(conn, bot_id, row, from_bot=False, type="text",
                                          content={"text": text})
        membership = {"chat_id": row["chat_id"], "status": "active"}
        if start_parameter is not None:
            membership["start_parameter"] = start_parameter
        update_id = enqueue_update(conn, bot_id, {"message": message, "membership": membership})
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
    enqueue_update(conn, bot_id, {"message": message, "membership": {
        "chat_id": row["chat_id"], "status": "stopped"}})
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
        if was_active:
            enqueue_update(conn, bot_id, {"membership": {
                "chat_id": row["chat_id"], "status": "stopped", "reason": "blocked"}})


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
        enqueue_update(conn, bot_id, {"message": message})
    return message


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


def user_view(conn: sqlite3.Connection, bot_id: int, user_id: int) -> dict:
    row = user_chat(conn, bot_id, user_id)
    return {"chat_id": row["chat_id"], "status": row["status"],
            "messages": messages.chat_history(conn, row),
            "callback_answers": callbacks.answers_seen(conn, row)}
