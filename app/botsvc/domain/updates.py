"""The per-bot update queue: what polling reads and webhooks deliver.

An update is kept until acknowledged (polling), delivered (webhook) or 24
hours old. update_id comes from one AUTOINCREMENT sequence, so it ascends per
bot and is never reused.
"""
from __future__ import annotations

import json
import sqlite3

from botsvc.clock import now
from botsvc.contract import RETENTION_SECONDS
from botsvc.jobs import DELIVER_WEBHOOKS, wake_after_commit
from botsvc.jsontext import dumps


def enqueue_update(conn: sqlite3.Connection, bot_id: int, update: dict) -> int:
    """Queue one Update (without update_id) for ``bot_id``; returns its update_id."""
    update_id = conn.execute(
        "INSERT INTO updates (bot_id, payload, created_at) VALUES (?, ?, ?)",
        (bot_id, dumps(update), now())).lastrowid
    # A bot with a webhook gets it now; for a polling bot the pass finds nothing due.
    wake_after_commit(conn, DELIVER_WEBHOOKS)
    return update_id


def render_update(row: sqlite3.Row) -> dict:
    return {"update_id": row["update_id"], **json.loads(row["payload"])}


def acknowledge(conn: sqlite3.Connection, bot_id: int, offset: int) -> None:
    """Updates below ``offset`` are acknowledged and deleted; 0 acknowledges nothing."""
    if offset > 0:
        conn.execute("DELETE FROM updates WHERE bot_id = ? AND update_id < ?", (bot_id, offset))


def pending_updates(conn: sqlite3.Connection, bot_id: int, offset: int, limit: int) -> list[dict]:
    """Unacknowledged updates younger than 24 hours of service time: an
    expired one is gone at once, even before the clean-up job deletes it."""
    rows = conn.execute(
        "SELECT update_id, payload FROM updates WHERE bot_id = ? AND update_id >= ?"
        " AND created_at >= ? ORDER BY update_id LIMIT ?",
        (bot_id, offset, now() - RETENTION_SECONDS, limit))
    return [render_update(row) for row in rows]


def drop_pending(conn: sqlite3.Connection, bot_id: int) -> int:
    return conn.execute("DELETE FROM updates WHERE bot_id = ?", (bot_id,)).rowcount


def delete_expired(conn: sqlite3.Connection, at: float | None = None) -> int:
    cutoff = int((now() if at is None else at) - RETENTION_SECONDS)
    return conn.execute("DELETE FROM updates WHERE created_at < ?", (cutoff,)).rowcount
