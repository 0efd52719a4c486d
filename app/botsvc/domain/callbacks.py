"""Callback queries: a user's click on a callback button, and the bot's answer.

A query is bound to its bot, chat and message; its id is the only handle the
bot gets, so answering looks it up by id *and* bot, and another bot's id is as
unknown as an invented one.
"""
from __future__ import annotations

import json
import secrets
import sqlite3

from botsvc.clock import now
from botsvc.domain import chat_events, keyboards, messages
from botsvc.domain.updates import enqueue_update
from botsvc.errors import invalid


def new_callback_query_id() -> str:
    return secrets.token_hex(16)


def click(conn: sqlite3.Connection, bot_id: int, chat: sqlite3.Row, message_id: int,
          callback_data: str) -> str:
    """The user clicks the callback button with ``callback_data`` on one of the
    bot's messages in ``chat`` (whose membership the caller checked).
    Queues the callback_query update and returns its id."""
    message = messages.own_message(conn, bot_id, chat, message_id)
    markup = json.loads(message["content"]).get("reply_markup")
    if callback_data not in keyboards.callback_buttons(markup):
        raise invalid("callback_data",
                      f"Message {message_id} has no callback button with this callback_data")
    query_id = new_callback_query_id()
    conn.execute(
        "INSERT INTO callback_queries (query_id, bot_id, chat_ref, message_id, data, created_at)"
        " VALUES (?, ?, ?, ?, ?, ?)",
        (query_id, bot_id, chat["id"], message_id, callback_data, now()))
    update = {"callback_query": {"id": query_id, "chat_id": chat["chat_id"],
                                 "message_id": message_id, "data": callback_data}}
    update_id = enqueue_update(conn, bot_id, update)
    chat_events.record(conn, chat, "click", message_id=message_id, callback_query_id=query_id,
                       update_id=update_id, update=update)
    return query_id


def answer(conn: sqlite3.Connection, bot_id: int, callback_query_id: str, *,
           text: str | None = None, show_alert: bool = False) -> None:
    """The bot answers one of its callback queries, once."""
    answered = conn.execute(
        "UPDATE callback_queries SET answered_at = ?, answer_text = ?, show_alert = ?,"
        " answer_seq = (SELECT COALESCE(MAX(answer_seq), 0) + 1 FROM callback_queries)"
        " WHERE query_id = ? AND bot_id = ? AND answered_at IS NULL",
        (now(), text or "", int(show_alert), callback_query_id, bot_id)).rowcount
    if not answered:
        raise invalid("callback_query_id",
                      "Unknown or already answered callback_query_id")


def render_answer(row: sqlite3.Row) -> dict:
    return {"callback_query_id": row["query_id"], "message_id": row["message_id"],
            "data": row["data"], "text": row["answer_text"],
            "show_alert": bool(row["show_alert"]), "date": row["answered_at"]}


def answers_after(conn: sqlite3.Connection, chat: sqlite3.Row, answer_seq: int,
                  limit: int) -> tuple[list[dict], int]:
    """The answers given in ``chat`` after answer ``answer_seq`` (the order
    of all answers), oldest first, at most ``limit``; and the seq of the
    last one returned (``answer_seq`` if none)."""
    rows = conn.execute(
        "SELECT * FROM callback_queries WHERE chat_ref = ? AND answer_seq > ?"
        " ORDER BY answer_seq LIMIT ?", (chat["id"], answer_seq, limit)).fetchall()
    return [render_answer(row) for row in rows], rows[-1]["answer_seq"] if rows else answer_seq


def newest_answer_seq(conn: sqlite3.Connection, chat: sqlite3.Row) -> int:
    row = conn.execute("SELECT MAX(answer_seq) FROM callback_queries WHERE chat_ref = ?",
                       (chat["id"],)).fetchone()
    return row[0] or 0


def answers_seen(conn: sqlite3.Connection, chat: sqlite3.Row,
                 message_ids: list[int]) -> list[dict]:
    """The answers the user saw in ``chat`` to clicks on these messages, in
    the order they were given. An index lookup per message
    (``callback_queries_by_message``), so the chat's other clicks cost nothing.
    Named with INDEXED BY: without statistics SQLite prefers the index that
    gives the answer order, which reads every answered click of the chat. The
    answers of one page are few, so they are put in order here rather than
    by SQLite's sort."""
    if not message_ids:
        return []
    marks = ",".join("?" * len(message_ids))
    rows = conn.execute(
        f"SELECT * FROM callback_queries INDEXED BY callback_queries_by_message"
        f" WHERE chat_ref = ? AND message_id IN ({marks})"
        f" AND answer_seq IS NOT NULL", (chat["id"], *message_ids)).fetchall()
    return [render_answer(row) for row in sorted(rows, key=lambda row: row["answer_seq"])]
