"""The record of webhook delivery attempts (getWebhookDeliveries).

Each attempt is recorded when it finishes, in the transaction that records
its outcome on the bot's webhook, and kept 24 hours of service time. The
``error`` is the same short text as getWebhookInfo's ``last_error``: it names
at most the host and port of the URL the bot configured, never an address
the service resolved or refused.

Each record also keeps what was sent and what came back (``HttpRecord``:
headers and body, bounded and redacted by the transport before they reach
here), shown only when getWebhookDeliveries is asked for ``detail``; the
default shape stays the short one.
"""
from __future__ import annotations

import json
import sqlite3
from dataclasses import dataclass, field

from botsvc.contract import RETENTION_SECONDS
from botsvc.pagination import SQLITE_MAX_INTEGER, ScopedIntCursor, page


@dataclass(frozen=True)
class HttpRecord:
    """One side of an attempt as kept: headers (name to value), the body as
    text, and whether the body was cut (or not read to its end)."""
    headers: dict[str, str]
    body: str
    body_truncated: bool


@dataclass(frozen=True)
class Attempt:
    """What one attempt took: when it started (service clock), how long it
    ran, the receiver's status when an answer arrived, and what was sent
    and answered; ``started_ns``, taken before the request went out
    (``clock.order_stamp``), is never shown: an export's order (the bot
    acts on the update after it)."""
    started_at: int
    duration_ms: int
    http_status: int | None = None
    request: HttpRecord | None = field(default=None, compare=False)
    response: HttpRecord | None = field(default=None, compare=False)
    started_ns: int | None = field(default=None, compare=False)


def _columns(side: HttpRecord | None) -> tuple[str | None, str | None, int | None]:
    if side is None:
        return None, None, None
    return json.dumps(side.headers, ensure_ascii=False), side.body, int(side.body_truncated)


def record(conn: sqlite3.Connection, bot_id: int, update_id: int, attempt: Attempt,
           error: str | None) -> None:
    """In the caller's transaction. ``attempt`` numbers the update's attempts
    from 1. A bot removed meanwhile (``reset``) gets no record."""
    sent, answered = _columns(attempt.request), _columns(attempt.response)
    conn.execute(
        "INSERT INTO webhook_deliveries (bot_id, update_id, attempt, started_at, duration_ms,"
        " http_status, error, request_headers, request_body, request_body_truncated,"
        " response_headers, response_body, response_body_truncated, started_ns)"
        " SELECT :bot, :update, (SELECT COUNT(*) + 1 FROM"
        " webhook_deliveries WHERE bot_id = :bot AND update_id = :update), :started,"
        " :duration, :status, :error, :sent_headers, :sent_body, :sent_cut,"
        " :answer_headers, :answer_body, :answer_cut, :started_ns"
        " WHERE EXISTS (SELECT 1 FROM bots WHERE id = :bot)",
        {"bot": bot_id, "update": update_id, "started": attempt.started_at,
         "duration": attempt.duration_ms, "status": attempt.http_status, "error": error,
         "sent_headers": sent[0], "sent_body": sent[1], "sent_cut": sent[2],
         "answer_headers": answered[0], "answer_body": answered[1], "answer_cut": answered[2],
         "started_ns": attempt.started_ns})


def _side(row: sqlite3.Row, prefix: str) -> dict | None:
    if row[f"{prefix}_headers"] is None:
        return None
    return {"headers": json.loads(row[f"{prefix}_headers"]), "body": row[f"{prefix}_body"],
            "body_truncated": bool(row[f"{prefix}_body_truncated"])}


def render(row: sqlite3.Row, detail: bool = False) -> dict:
    record = {"update_id": row["update_id"], "attempt": row["attempt"],
              "started_at": row["started_at"], "duration_ms": row["duration_ms"]}
    if row["http_status"] is not None:
        record["http_status"] = row["http_status"]
    if row["error"] is not None:
        record["error"] = row["error"]
    if detail:
        for prefix in ("request", "response"):
            side = _side(row, prefix)
            if side is not None:
                record[prefix] = side
    if row["replay_of"] is not None:   # redeliverUpdate's (botsvc.domain.replays)
        record["replay_of"] = row["replay_of"]
    return record


def deliveries_page(conn: sqlite3.Connection, bot_id: int, limit: int, cursor: str | None,
                    now: float, *, detail: bool = False) -> dict:
    """The bot's attempts of the last 24 hours, newest first; with ``detail``
    each carries its request and (when one came) response."""
    cutoff = int(now - RETENTION_SECONDS)

    def fetch(before: int | None, n: int):
        return conn.execute(
            "SELECT d.*, r.replay_of FROM webhook_deliveries d LEFT JOIN update_replays r"
            " ON r.update_id = d.update_id WHERE d.bot_id = ? AND d.id < ? AND d.started_at >= ?"
            " ORDER BY d.id DESC LIMIT ?",
            (bot_id, SQLITE_MAX_INTEGER if before is None else before, cutoff, n)).fetchall()

    rows, next_cursor = page(fetch, lambda row: row["id"], limit, cursor,
                             ScopedIntCursor(f"webhook-deliveries:{bot_id}"))
    return {"deliveries": [render(row, detail) for row in rows], "next_cursor": next_cursor}


def delete_expired(conn: sqlite3.Connection, now: float) -> int:
    return conn.execute("DELETE FROM webhook_deliveries WHERE started_at < ?",
                        (int(now - RETENTION_SECONDS),)).rowcount
