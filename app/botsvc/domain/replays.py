"""Replays of updates (the testing tools' redeliverUpdate, docs/testing-tools.md).

A kept update is queued again for its bot as a NEW update: a new update_id
from the one sequence, delivered the way the bot gets its updates (polling
or its webhook), with the same content. The Update a bot receives is the
bot's contract, so it carries no mark; the mark (``replay_of``) is kept
beside it in ``update_replays`` for the operator's views (the webhook
delivery records, the sandbox's path of an update), 24 hours as updates are.

An update is kept while it is in the queue (not yet acknowledged or
delivered, younger than 24 hours), in a chat's journal (what a user's action
queued, kept as long as the chat's history) or as a replay (24 hours).
"""
from __future__ import annotations

import json
import sqlite3

from botsvc.clock import now
from botsvc.db import transaction
from botsvc.domain import updates
from botsvc.domain.bots import require_bot
from botsvc.errors import invalid
from botsvc.jsontext import dumps

RETENTION_SECONDS = updates.RETENTION_SECONDS


def kept_update(conn: sqlite3.Connection, bot_id: int, update_id: int) -> dict | None:
    """The update's content (the Update without update_id) while it is kept
    for this bot, else None. Each place is one indexed read."""
    cutoff = now() - RETENTION_SECONDS
    row = conn.execute(
        "SELECT payload FROM updates WHERE update_id = ? AND bot_id = ? AND created_at >= ?",
        (update_id, bot_id, cutoff)).fetchone()
    if row is None:
        row = conn.execute(
            "SELECT e.payload FROM chat_events e JOIN chats c ON c.id = e.chat_ref"
            " WHERE e.update_id = ? AND c.bot_id = ? AND e.payload IS NOT NULL",
            (update_id, bot_id)).fetchone()
    if row is None:
        row = conn.execute(
            "SELECT payload FROM update_replays WHERE update_id = ? AND bot_id = ?"
            " AND created_at >= ?", (update_id, bot_id, cutoff)).fetchone()
    return None if row is None else json.loads(row[0])


def redeliver(conn: sqlite3.Connection, bot_id: int, update_id: int) -> dict:
    """Queue update ``update_id`` of bot ``bot_id`` again as a new update;
    ``{update_id, replay_of}``. INVALID_PARAMETER naming bot_id (no such bot)
    or update_id (not this bot's, or no longer kept)."""
    with transaction(conn):
        require_bot(conn, bot_id)
        content = kept_update(conn, bot_id, update_id)
        if content is None:
            raise invalid("update_id", f"Update {update_id} is not a kept update of bot {bot_id}:"
                                       " it is another bot's, or older than what is kept")
        new_id = updates.enqueue_update(conn, bot_id, content)
        conn.execute("INSERT INTO update_replays (update_id, bot_id, replay_of, payload,"
                     " created_at) VALUES (?, ?, ?, ?, ?)",
                     (new_id, bot_id, update_id, dumps(content), now()))
    return {"update_id": new_id, "replay_of": update_id}


def originals(conn: sqlite3.Connection, bot_id: int, update_ids: list[int]) -> dict[int, int]:
    """``{update_id: replay_of}`` for those of ``update_ids`` that are kept replays."""
    if not update_ids:
        return {}
    marks = ",".join("?" * len(update_ids))
    rows = conn.execute(
        f"SELECT update_id, replay_of FROM update_replays WHERE bot_id = ? AND update_id IN"
        f" ({marks}) AND created_at >= ?", (bot_id, *update_ids, now() - RETENTION_SECONDS))
    return {row[0]: row[1] for row in rows}


def replays_of(conn: sqlite3.Connection, bot_id: int, update_id: int, limit: int) -> list[dict]:
    """The kept replays of one update, oldest first, at most ``limit``:
    ``[{update_id, created_at}]``."""
    rows = conn.execute(
        "SELECT update_id, created_at FROM update_replays WHERE bot_id = ? AND replay_of = ?"
        " AND created_at >= ? ORDER BY update_id LIMIT ?",
        (bot_id, update_id, now() - RETENTION_SECONDS, limit))
    return [{"update_id": row[0], "created_at": row[1]} for row in rows]


def replay(conn: sqlite3.Connection, bot_id: int, update_id: int) -> dict | None:
    """A kept replay: ``{update_id, replay_of, created_at, update}``, or None."""
    row = conn.execute(
        "SELECT update_id, replay_of, created_at, payload FROM update_replays"
        " WHERE update_id = ? AND bot_id = ? AND created_at >= ?",
        (update_id, bot_id, now() - RETENTION_SECONDS)).fetchone()
    if row is None:
        return None
    return {"update_id": row[0], "replay_of": row[1], "created_at": row[2],
            "update": {"update_id": row[0], **json.loads(row[3])}}


def delete_expired(conn: sqlite3.Connection, at: float | None = None) -> int:
    cutoff = int((now() if at is None else at) - RETENTION_SECONDS)
    return conn.execute("DELETE FROM update_replays WHERE created_at < ?", (cutoff,)).rowcount


# -- what the sandbox's path of an update reads -----------------------------------

def journal_updates(conn: sqlite3.Connection, chat_ref: int, limit: int) -> list[dict]:
    """The chat's newest ``limit`` journal events that queued an update, oldest
    first: ``[{event_id, kind, date, update_id, callback_query_id}]`` (the
    chat's own index)."""
    rows = conn.execute(
        "SELECT id, kind, date, update_id, callback_query_id FROM chat_events"
        " WHERE chat_ref = ? AND update_id IS NOT NULL ORDER BY id DESC LIMIT ?",
        (chat_ref, limit)).fetchall()
    return [{"event_id": row[0], "kind": row[1], "date": row[2], "update_id": row[3],
             "callback_query_id": row[4]} for row in reversed(rows)]


def bot_replays(conn: sqlite3.Connection, bot_id: int, limit: int) -> list[dict]:
    """The bot's newest ``limit`` kept replays, oldest first:
    ``[{update_id, replay_of, created_at}]``."""
    rows = conn.execute(
        "SELECT update_id, replay_of, created_at FROM update_replays WHERE bot_id = ?"
        " AND created_at >= ? ORDER BY update_id DESC LIMIT ?",
        (bot_id, now() - RETENTION_SECONDS, limit)).fetchall()
    return [{"update_id": row[0], "replay_of": row[1], "created_at": row[2]}
            for row in reversed(rows)]
