"""A chat's journal: each thing its user did (a Start, restart or unblock, a
Stop, a Block, a message, a click) with the update it queued for the bot,
exactly as queued. The updates queue forgets an update once the bot has it;
the journal keeps it as long as the chat's history, so the sandbox can show
a developer what their bot received, and where in the chat each change of
membership happened (``after_message_id``: the bot's newest message_id then).
"""
from __future__ import annotations

import json
import sqlite3

from botsvc.clock import now, order_stamp
from botsvc.jsontext import dumps

KINDS = ("start", "restart", "unblock", "stop", "block", "message", "click")
# What a timeline shows as a line of its own (a message is its bubble).
LINE_KINDS = ("start", "restart", "unblock", "stop", "block", "click")


def record(conn: sqlite3.Connection, chat: sqlite3.Row, kind: str, *,
           message_id: int | None = None, callback_query_id: str | None = None,
           update_id: int | None = None, update: dict | None = None) -> int:
    """Journal one thing the chat's user did, in the caller's transaction;
    dated as its update's message when there is one, and stamped
    (``recorded_ns``, ``clock.order_stamp``) inside the transaction, before
    the update can reach the bot."""
    newest = conn.execute("SELECT last_message_id FROM bots WHERE id = ?",
                          (chat["bot_id"],)).fetchone()[0]
    return conn.execute(
        "INSERT INTO chat_events (chat_ref, kind, date, message_id, after_message_id,"
        " callback_query_id, update_id, payload, recorded_ns) VALUES (?, ?, ?, ?, ?, ?, ?, ?, ?)",
        (chat["id"], kind, ((update or {}).get("message") or {}).get("date", now()), message_id,
         newest, callback_query_id, update_id,
         None if update is None else dumps(update), order_stamp())).lastrowid


def render(row: sqlite3.Row) -> dict:
    """An event as the sandbox shows it: the update only when there was one,
    as getUpdates or a webhook delivered it (update_id first)."""
    event = {"event_id": row["id"], "kind": row["kind"], "date": row["date"],
             "after_message_id": row["after_message_id"]}
    if row["message_id"] is not None:
        event["message_id"] = row["message_id"]
    if row["callback_query_id"] is not None:
        event["callback_query_id"] = row["callback_query_id"]
    if row["update_id"] is not None:
        event["update"] = {"update_id": row["update_id"], **json.loads(row["payload"])}
    return event


def events_after(conn: sqlite3.Connection, chat: sqlite3.Row, event_id: int,
                 limit: int) -> list[dict]:
    """The chat's events after ``event_id``, oldest first, at most ``limit``."""
    rows = conn.execute("SELECT * FROM chat_events WHERE chat_ref = ? AND id > ?"
                        " ORDER BY id LIMIT ?", (chat["id"], event_id, limit))
    return [render(row) for row in rows]


def newest_event_id(conn: sqlite3.Connection, chat: sqlite3.Row) -> int:
    row = conn.execute("SELECT MAX(id) FROM chat_events WHERE chat_ref = ?",
                       (chat["id"],)).fetchone()
    return row[0] or 0


def events_between(conn: sqlite3.Connection, chat: sqlite3.Row, after_message_id: int,
                   up_to_message_id: int, kinds: tuple[str, ...] = LINE_KINDS) -> list[dict]:
    """The chat's events placed after message ``after_message_id`` and up to
    ``up_to_message_id`` (the span of a page of messages), oldest first."""
    marks = ",".join("?" * len(kinds))
    rows = conn.execute(
        f"SELECT * FROM chat_events WHERE chat_ref = ? AND after_message_id > ?"
        f" AND after_message_id <= ? AND kind IN ({marks}) ORDER BY id",
        (chat["id"], after_message_id, up_to_message_id, *kinds))
    return [render(row) for row in rows]


def events_of_message(conn: sqlite3.Connection, chat: sqlite3.Row,
                      message_id: int) -> list[dict]:
    """What the user did with one message: sent it (its update), or clicked
    its buttons (one event per click), oldest first."""
    rows = conn.execute("SELECT * FROM chat_events WHERE chat_ref = ? AND message_id = ?"
                        " ORDER BY id", (chat["id"], message_id))
    return [render(row) for row in rows]


def find_event(conn: sqlite3.Connection, chat: sqlite3.Row, event_id: int) -> dict | None:
    row = conn.execute("SELECT * FROM chat_events WHERE id = ? AND chat_ref = ?",
                       (event_id, chat["id"])).fetchone()
    return render(row) if row else None


def remove_before(conn: sqlite3.Connection, cutoff: int, batch: int) -> int:
    """Remove up to ``batch`` events dated before ``cutoff`` (history retention)."""
    return conn.execute("DELETE FROM chat_events WHERE id IN (SELECT id FROM chat_events"
                        " WHERE date < ? LIMIT ?)", (cutoff, batch)).rowcount
