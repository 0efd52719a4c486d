"""The record of webhook delivery attempts (getWebhookDeliveries).

Each attempt is recorded when it finishes, in the transaction that records
its outcome on the bot's webhook, and kept 24 hours of service time. The
``error`` is the same short text as getWebhookInfo's ``last_error``: it names
at most the host and port of the URL the bot configured, never an address
the service resolved or refused.
"""
from __future__ import annotations

import sqlite3
from dataclasses import dataclass

from botsvc.pagination import SQLITE_MAX_INTEGER, ScopedIntCursor, page

RETENTION_SECONDS = 24 * 3600


@dataclass(frozen=True)
class Attempt:
    """What one attempt took: when it started (service clock), how long it
    ran, and the receiver's status when an answer arrived."""
    started_at: int
    duration_ms: int
    http_status: int | None = None


def record(conn: sqlite3.Connection, bot_id: int, update_id: int, attempt: Attempt,
           error: str | None) -> None:
    """In the caller's transaction. ``attempt`` numbers the update's attempts
    from 1. A bot removed meanwhile (``reset``) gets no record."""
    conn.execute(
        "INSERT INTO webhook_deliveries (bot_id, update_id, attempt, started_at, duration_ms,"
        " http_status, error) SELECT :bot, :update, (SELECT COUNT(*) + 1 FROM"
        " webhook_deliveries WHERE bot_id = :bot AND update_id = :update), :started,"
        " :duration, :status, :error WHERE EXISTS (SELECT 1 FROM bots WHERE id = :bot)",
        {"bot": bot_id, "update": update_id, "started": attempt.started_at,
         "duration": attempt.duration_ms, "status": attempt.http_status, "error": error})


def render(row: sqlite3.Row) -> dict:
    record = {"update_id": row["update_id"], "attempt": row["attempt"],
              "started_at": row["started_at"], "duration_ms": row["duration_ms"]}
    if row["http_status"] is not None:
        record["http_status"] = row["http_status"]
    if row["error"] is not None:
        record["error"] = row["error"]
    if row["replay_of"] is not None:   # redeliverUpdate's (botsvc.domain.replays)
        record["replay_of"] = row["replay_of"]
    return record


def deliveries_page(conn: sqlite3.Connection, bot_id: int, limit: int, cursor: str | None,
                    now: float) -> dict:
    """The bot's attempts of the last 24 hours, newest first."""
    cutoff = int(now - RETENTION_SECONDS)

    def fetch(before: int | None, n: int):
        return conn.execute(
            "SELECT d.*, r.replay_of FROM webhook_deliveries d LEFT JOIN update_replays r"
            " ON r.update_id = d.update_id WHERE d.bot_id = ? AND d.id < ? AND d.started_at >= ?"
            " ORDER BY d.id DESC LIMIT ?",
            (bot_id, SQLITE_MAX_INTEGER if before is None else before, cutoff, n)).fetchall()

    rows, next_cursor = page(fetch, lambda row: row["id"], limit, cursor,
                             ScopedIntCursor(f"webhook-deliveries:{bot_id}"))
    return {"deliveries": [render(row) for row in rows], "next_cursor": next_cursor}


def delete_expired(conn: sqlite3.Connection, now: float) -> int:
    return conn.execute("DELETE FROM webhook_deliveries WHERE started_at < ?",
                        (int(now - RETENTION_SECONDS),)).rowcount
