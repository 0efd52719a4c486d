"""Broadcasts and subscribers, as plain functions on a connection.

A broadcast is a row with its counters plus one row per recipient. Every
change of recipient states happens in one transaction with the matching
change of the counters (and, for deliveries, with the message itself), so
``queued + sent + failed + cancelled = total`` in every committed state.

Statuses (the contract's): a broadcast is ``queued`` until the first recipient
reaches a final state, then ``running``; ``completed`` once every recipient is
final, or ``cancelled`` by cancelBroadcast. A broadcast created with no
recipient at all is ``completed`` at once.
"""
from __future__ import annotations

import secrets
import sqlite3
from dataclasses import dataclass

from botsvc.clock import now
from botsvc.contract import BROADCAST_ID, CHAT_ID
from botsvc.domain.bots import is_platform_disabled
from botsvc.errors import ApiError, ErrorCode
from botsvc.jsontext import dumps
from botsvc.pagination import PatternCursor, ScopedIntCursor, page

UNFINISHED = ("queued", "running")
SUBSCRIBER_CURSOR = PatternCursor(CHAT_ID)


def new_broadcast_id() -> str:
    return "bc_" + secrets.token_hex(16)


def broadcast_not_found() -> ApiError:
    return ApiError(ErrorCode.BROADCAST_NOT_FOUND, "Broadcast not found", field="broadcast_id")


def render_broadcast(row: sqlite3.Row) -> dict:
    return {"broadcast_id": row["broadcast_id"], "status": row["status"],
            "counts": {"queued": row["queued"], "sent": row["sent"],
                       "failed": row["failed"], "cancelled": row["cancelled"]},
            "created_at": row["created_at"], "completed_at": row["completed_at"]}


def render_recipient(row: sqlite3.Row) -> dict:
    recipient = {"chat_id": row["chat_id"], "status": row["status"]}
    if row["status"] == "sent":
        recipient["message_id"] = row["message_id"]
    elif row["status"] == "failed":
        recipient["last_error"] = row["last_error"]
    return recipient


def require_broadcast(conn: sqlite3.Connection, bot_id: int, broadcast_id: str) -> sqlite3.Row:
    """The bot's own broadcast; another bot's id is as unknown as a made-up one."""
    row = None
    if BROADCAST_ID.match(broadcast_id):
        row = conn.execute("SELECT * FROM broadcasts WHERE broadcast_id = ? AND bot_id = ?",
                           (broadcast_id, bot_id)).fetchone()
    if row is None:
        raise broadcast_not_found()
    return row


# -- subscribers ---------------------------------------------------------------

def subscribers_page(conn: sqlite3.Connection, bot_id: int, limit: int,
                     cursor: str | None) -> dict:
    """Active members in chat_id order; the cursor is the last chat_id shown,
    which stays a valid position even if that member stops meanwhile."""
    def fetch(after: str | None, n: int):
        return conn.execute(
            "SELECT chat_id, started_at FROM chats WHERE bot_id = ? AND status = 'active'"
            " AND chat_id > ? ORDER BY chat_id LIMIT ?", (bot_id, after or "", n)).fetchall()

    rows, next_cursor = page(fetch, lambda row: row["chat_id"], limit, cursor,
                             SUBSCRIBER_CURSOR)
    return {"subscribers": [{"chat_id": r["chat_id"], "started_at": r["started_at"]}
                            for r in rows],
            "next_cursor": next_cursor}


def subscriber_count(conn: sqlite3.Connection, bot_id: int) -> int:
    """How many members getSubscribers would list now."""
    return conn.execute("SELECT COUNT(*) FROM chats WHERE bot_id = ? AND status = 'active'",
                        (bot_id,)).fetchone()[0]


# -- creation ------------------------------------------------------------------

def chat_not_in_bot(chat_id: str, index: int) -> ApiError:
    return ApiError(ErrorCode.CHAT_NOT_FOUND, f"Chat not found: chat_ids[{index}]",
                    field="chat_ids", chat_id=chat_id, index=index)


def create_broadcast(conn: sqlite3.Connection, bot_id: int, method: str, payload: dict,
                     chat_ids: list[str] | None) -> sqlite3.Row:
    """Queue ``method`` with ``payload`` for the given members, or (``chat_ids``
    None) for a snapshot of the members active now. Must run in the caller's
    transaction. A repeated chat_id is one recipient: one message per member."""
    at = now()
    ref = conn.execute(
        "INSERT INTO broadcasts (broadcast_id, bot_id, method, payload, status, total, queued,"
        " created_at) VALUES (?, ?, ?, ?, 'queued', 0, 0, ?)",
        (new_broadcast_id(), bot_id, method, dumps(payload), at)).lastrowid
    if chat_ids is None:
        conn.execute(
            "INSERT INTO broadcast_recipients (broadcast_ref, position, chat_ref, status)"
            " SELECT ?, ROW_NUMBER() OVER (ORDER BY chat_id), id, 'queued' FROM chats"
            " WHERE bot_id = ? AND status = 'active'", (ref, bot_id))
    else:
        unique = list(dict.fromkeys(chat_ids))
        missing = conn.execute(
            "SELECT j.key, j.value FROM json_each(?) j LEFT JOIN chats c"
            " ON c.chat_id = j.value AND c.bot_id = ? WHERE c.id IS NULL ORDER BY j.key LIMIT 1",
            (dumps(unique), bot_id)).fetchone()
        if missing is not None:
            raise chat_not_in_bot(missing["value"], chat_ids.index(missing["value"]))
        conn.execute(
            "INSERT INTO broadcast_recipients (broadcast_ref, position, chat_ref, status)"
            " SELECT ?, j.key + 1, c.id, 'queued' FROM json_each(?) j CROSS"
            " JOIN chats c ON c.chat_id = j.value AND c.bot_id = ?", (ref, dumps(unique), bot_id))
    total = conn.execute("SELECT COUNT(*) FROM broadcast_recipients WHERE broadcast_ref = ?",
                         (ref,)).fetchone()[0]
    if total:
        conn.execute("UPDATE broadcasts SET total = ?, queued = ? WHERE id = ?",
                     (total, total, ref))
    else:  # nobody to deliver to: every recipient (all none of them) is final
        conn.execute("UPDATE broadcasts SET status = 'completed', completed_at = ? WHERE id = ?",
                     (at, ref))
    return conn.execute("SELECT * FROM broadcasts WHERE id = ?", (ref,)).fetchone()


def sample_active_recipient(conn: sqlite3.Connection, broadcast_ref: int) -> sqlite3.Row | None:
    """One recipient that is an active member now (to try the payload on)."""
    return conn.execute(
        "SELECT c.* FROM broadcast_recipients r JOIN chats c ON c.id = r.chat_ref"
        " WHERE r.broadcast_ref = ? AND c.status = 'active' ORDER BY r.position LIMIT 1",
        (broadcast_ref,)).fetchone()


# -- reading and cancelling ------------------------------------------------------

def recent_broadcasts(conn: sqlite3.Connection, bot_id: int, limit: int) -> list[dict]:
    """The bot's newest broadcasts, newest first, each with its method and total."""
    rows = conn.execute("SELECT * FROM broadcasts WHERE bot_id = ? ORDER BY id DESC LIMIT ?",
                        (bot_id, limit))
    return [{**render_broadcast(row), "method": row["method"], "total": row["total"]}
            for row in rows]


def recipients_page(conn: sqlite3.Connection, bot_id: int, broadcast_id: str, limit: int,
                    cursor: str | None) -> dict:
    """Recipients in delivery order. The cursor is bound to this broadcast."""
    broadcast = require_broadcast(conn, bot_id, broadcast_id)

    def fetch(after: int | None, n: int):
        return conn.execute(
            "SELECT r.position, r.status, r.message_id, r.last_error, c.chat_id"
            " FROM broadcast_recipients r JOIN chats c ON c.id = r.chat_ref"
            " WHERE r.broadcast_ref = ? AND r.position > ? ORDER BY r.position LIMIT ?",
            (broadcast["id"], after or 0, n)).fetchall()

    rows, next_cursor = page(fetch, lambda row: row["position"], limit, cursor,
                             ScopedIntCursor(broadcast["broadcast_id"]))
    return {"recipients": [render_recipient(row) for row in rows], "next_cursor": next_cursor}


def cancel_broadcast(conn: sqlite3.Connection, bot_id: int, broadcast_id: str) -> int:
    """Pending recipients become cancelled (returns how many); sent messages
    stay. Cancelling a broadcast that is already completed or cancelled
    changes nothing. Must run
    in the caller's transaction (the same write lock as deliveries, so no
    recipient is both delivered and cancelled)."""
    broadcast = require_broadcast(conn, bot_id, broadcast_id)
    if broadcast["status"] not in UNFINISHED:
        return 0
    cancelled = conn.execute(
        "UPDATE broadcast_recipients SET status = 'cancelled'"
        " WHERE broadcast_ref = ? AND status = 'queued'", (broadcast["id"],)).rowcount
    conn.execute(
        "UPDATE broadcasts SET status = 'cancelled', queued = queued - ?,"
        " cancelled = cancelled + ?, completed_at = ? WHERE id = ?",
        (cancelled, cancelled, now(), broadcast["id"]))
    return cancelled


# -- delivery ------------------------------------------------------------------

def unfinished_broadcasts(conn: sqlite3.Connection) -> list[sqlite3.Row]:
    """Broadcasts with work left, oldest first. Delivery pauses while the
    platform or the broadcast's bot is disabled, and resumes when re-enabled."""
    if is_platform_disabled(conn):
        return []
    return conn.execute(
        "SELECT b.id, b.bot_id, b.method, b.payload FROM broadcasts b"
        " JOIN bots ON bots.id = b.bot_id"
        " WHERE b.status IN ('queued', 'running') AND bots.disabled = 0 ORDER BY b.id").fetchall()


def is_unfinished(conn: sqlite3.Connection, broadcast_ref: int) -> bool:
    row = conn.execute("SELECT status FROM broadcasts WHERE id = ?", (broadcast_ref,)).fetchone()
    return row is not None and row["status"] in UNFINISHED


def queued_recipients(conn: sqlite3.Connection, broadcast_ref: int, n: int) -> list[sqlite3.Row]:
    """The next ``n`` pending recipients with their chat as it is now (status
    and blocking are rechecked at delivery). Read inside the delivering
    transaction, so no other process can deliver them too."""
    return conn.execute(
        # Without INDEXED BY the planner walks the primary key through every
        # recipient already delivered, on every batch.
        "SELECT r.position, c.* FROM broadcast_recipients r"
        " INDEXED BY broadcast_recipients_queued JOIN chats c ON c.id = r.chat_ref"
        " WHERE r.broadcast_ref = ? AND r.status = 'queued' ORDER BY r.position LIMIT ?",
        (broadcast_ref, n)).fetchall()


@dataclass(frozen=True)
class Outcome:
    position: int
    message_id: int | None = None   # set when sent
    error_code: str | None = None   # set when failed


def record_outcomes(conn: sqlite3.Connection, broadcast_ref: int,
                    outcomes: list[Outcome]) -> None:
    """Final states for delivered recipients and the counters, in the caller's
    transaction (the one that also inserted the messages)."""
    if not outcomes:
        return
    conn.executemany(
        "UPDATE broadcast_recipients SET status = ?, message_id = ?, last_error = ?"
        " WHERE broadcast_ref = ? AND position = ? AND status = 'queued'",
        [("sent" if o.error_code is None else "failed", o.message_id, o.error_code,
          broadcast_ref, o.position) for o in outcomes])
    sent = sum(1 for o in outcomes if o.error_code is None)
    failed = len(outcomes) - sent
    conn.execute(
        "UPDATE broadcasts SET queued = queued - ?, sent = sent + ?, failed = failed + ?,"
        " status = CASE WHEN queued - ? = 0 THEN 'completed' ELSE 'running' END,"
        " completed_at = CASE WHEN queued - ? = 0 THEN ? END WHERE id = ?",
        (len(outcomes), sent, failed, len(outcomes), len(outcomes), now(), broadcast_ref))
