"""A bot's webhook: its configuration, the delivery state of its queue, and the
atomic claims the delivery worker makes on it.

Per bot, updates go out one at a time in update_id order: only the queue head
(the lowest pending update_id younger than 24 hours) is ever delivered, and the
next one only once the head is gone. A deliverer claims a head by setting a
lease on the bot's row inside ``BEGIN IMMEDIATE`` (``UPDATE ... RETURNING``), so
any number of processes may look for work at once and at most one of them
delivers a given bot's head at a time; a crashed deliverer's lease expires.

``generation`` counts configurations: setWebhook and deleteWebhook bump it.
An attempt's outcome is recorded only under the generation it was claimed in,
so a late failure against the old URL cannot put the new one into backoff.
Both methods keep an existing lease, so an attempt still in flight finishes
before the head can be claimed again under the new configuration.
"""
from __future__ import annotations

import json
import random
import secrets
import sqlite3
from collections.abc import Callable
from dataclasses import dataclass, field

from botsvc import clock
from botsvc.contract import RETENTION_SECONDS
from botsvc.db import transaction
from botsvc.domain import updates, webhook_deliveries
from botsvc.domain.webhook_deliveries import Attempt
from botsvc.jsontext import dumps

FIRST_RETRY_SECONDS = 1.0
MAX_RETRY_SECONDS = 600.0
# A retry waits its nominal interval less up to this fraction, chosen at
# random: receivers that failed together do not all come back at once, and
# each interval still exceeds the one before (0.8 * 2 > 1).
RETRY_JITTER = 0.2


@dataclass(frozen=True)
class Claim:
    """One queue head leased for delivery."""
    bot_id: int
    update_id: int
    generation: int
    lease_token: str
    url: str
    secret_token: str = field(repr=False)
    body: bytes = field(repr=False)   # the Update JSON, update_id first


# -- configuration (the API methods) -------------------------------------------

def webhook_is_set(conn: sqlite3.Connection, bot_id: int) -> bool:
    return conn.execute("SELECT 1 FROM webhooks WHERE bot_id = ? AND url IS NOT NULL",
                        (bot_id,)).fetchone() is not None


def set_webhook(conn: sqlite3.Connection, bot_id: int, url: str, secret_token: str,
                drop_pending_updates: bool, at: int) -> None:
    """Configure (or replace) the bot's webhook. A new configuration starts with
    a clean record: no backoff, no last error, no last success."""
    with transaction(conn):
        conn.execute(
            "INSERT INTO webhooks (bot_id, url, secret_token, generation, set_at)"
            " VALUES (?, ?, ?, 1, ?)"
            " ON CONFLICT (bot_id) DO UPDATE SET url = excluded.url,"
            " secret_token = excluded.secret_token, generation = generation + 1,"
            " set_at = excluded.set_at, failures = 0, next_attempt_at = 0,"
            " last_error = NULL, last_error_at = NULL, last_success_at = NULL",
            (bot_id, url, secret_token, at))
        if drop_pending_updates:
            updates.drop_pending(conn, bot_id)


def delete_webhook(conn: sqlite3.Connection, bot_id: int, drop_pending_updates: bool) -> None:
    """Back to polling; the webhook's secret and record are forgotten."""
    with transaction(conn):
        conn.execute(
            "UPDATE webhooks SET url = NULL, secret_token = NULL, generation = generation + 1,"
            " set_at = NULL, failures = 0, next_attempt_at = 0, last_error = NULL,"
            " last_error_at = NULL, last_success_at = NULL WHERE bot_id = ?", (bot_id,))
        if drop_pending_updates:
            updates.drop_pending(conn, bot_id)


def webhook_info(conn: sqlite3.Connection, bot_id: int, now: float) -> dict:
    """WebhookInfo: url is "" while the bot polls; the error and success
    fields appear only once recorded for the current webhook."""
    row = conn.execute("SELECT url, last_error, last_error_at, last_success_at FROM webhooks"
                       " WHERE bot_id = ?", (bot_id,)).fetchone()
    pending = conn.execute("SELECT COUNT(*) FROM updates WHERE bot_id = ? AND created_at >= ?",
                           (bot_id, _retention_cutoff(now))).fetchone()[0]
    info: dict = {"url": (row["url"] if row else None) or "", "pending_update_count": pending}
    if row is not None and row["last_error_at"] is not None:
        info["last_error"] = row["last_error"]
        info["last_error_at"] = row["last_error_at"]
    if row is not None and row["last_success_at"] is not None:
        info["last_success_at"] = row["last_success_at"]
    return info


# -- delivery (the worker) -----------------------------------------------------

def retry_delay(failures: int, rand: Callable[[], float] = random.random) -> float:
    """Seconds before the next attempt after ``failures`` consecutive failures:
    1, 2, 4, ... capped at 600, each less a random part of up to 20 %."""
    nominal = min(MAX_RETRY_SECONDS, FIRST_RETRY_SECONDS * 2.0 ** min(failures - 1, 30))
    return nominal * (1.0 - RETRY_JITTER * rand())


def _retention_cutoff(now: float) -> int:
    # Updates older than 24 hours are dropped: never delivered nor counted,
    # even before the clean-up job deletes them.
    return int(now - RETENTION_SECONDS)


# Due: in webhook mode, out of backoff, not leased, something to deliver. A
# disabled bot or platform gets nothing delivered, as it could poll nothing;
# its updates wait (up to 24 hours) until it is enabled again. The backoff
# follows the service clock (advanceClock makes a retry due); a lease the
# machine's, since it stands for its holder being alive.
_DUE = (
    " w.url IS NOT NULL AND w.next_attempt_at <= :now"
    " AND (w.lease_expires_at IS NULL OR w.lease_expires_at <= :machine_now)"
    " AND EXISTS (SELECT 1 FROM updates u WHERE u.bot_id = w.bot_id"
    " AND u.created_at >= :cutoff)"
    " AND NOT EXISTS (SELECT 1 FROM bots b WHERE b.id = w.bot_id AND b.disabled)"
    " AND NOT EXISTS (SELECT 1 FROM platform p WHERE p.disabled)"
)


def any_due(conn: sqlite3.Connection, now: float) -> bool:
    """A read without the write lock: most ticks find nothing to do."""
    return conn.execute(f"SELECT 1 FROM webhooks w WHERE {_DUE} LIMIT 1",
                        {"now": now, "cutoff": _retention_cutoff(now),
                         "machine_now": clock.machine_time()}).fetchone() is not None


def claim_due(conn: sqlite3.Connection, now: float, limit: int, lease_seconds: float,
              bot_id: int | None = None) -> list[Claim]:
    """Lease the heads of up to ``limit`` bots whose delivery is due (longest
    waiting first), or only ``bot_id``'s head. Atomic across processes."""
    with transaction(conn):
        return _claim_due(conn, now, limit, lease_seconds, bot_id)


def _claim_due(conn: sqlite3.Connection, now: float, limit: int, lease_seconds: float,
               bot_id: int | None) -> list[Claim]:
    """claim_due in the caller's write transaction."""
    machine_now = clock.machine_time()
    params = {"now": now, "cutoff": _retention_cutoff(now), "limit": limit,
              "token": secrets.token_hex(16), "machine_now": machine_now,
              "expires": machine_now + lease_seconds, "bot": bot_id}
    only_bot = " AND w.bot_id = :bot" if bot_id is not None else ""
    leased = conn.execute(
        "UPDATE webhooks SET lease_token = :token, lease_expires_at = :expires,"
        " leased_update_id = (SELECT MIN(u.update_id) FROM updates u"
        "   WHERE u.bot_id = webhooks.bot_id AND u.created_at >= :cutoff)"
        f" WHERE bot_id IN (SELECT w.bot_id FROM webhooks w WHERE {_DUE}{only_bot}"
        "   ORDER BY w.next_attempt_at LIMIT :limit)"
        " RETURNING bot_id, leased_update_id, generation, url, secret_token",
        params).fetchall()
    claims = []
    for row in leased:
        payload = conn.execute("SELECT payload FROM updates WHERE update_id = ?",
                               (row["leased_update_id"],)).fetchone()["payload"]
        body = dumps({"update_id": row["leased_update_id"],
                      **json.loads(payload)}).encode("utf-8")
        claims.append(Claim(row["bot_id"], row["leased_update_id"], row["generation"],
                            params["token"], row["url"], row["secret_token"], body))
    return claims


@dataclass(frozen=True)
class Outcome:
    """How one attempt on a claimed head went."""
    claim: Claim
    delivered: bool
    error: str | None = None
    attempt: Attempt | None = None   # for the delivery record, when known


def record_attempt(conn: sqlite3.Connection, claim: Claim, delivered: bool, error: str | None,
                   now: float, lease_seconds: float, *,
                   rand: Callable[[], float] = random.random,
                   attempt: Attempt | None = None) -> Claim | None:
    """Record one attempt's outcome (in the delivery record too, when
    ``attempt`` says what it took) and release the lease. After a success the
    same transaction claims the bot's next update, which it returns (None when
    there is none, or when the claim was lost to expiry or a new configuration)."""
    [following] = record_attempts(conn, [Outcome(claim, delivered, error, attempt)], now,
                                  lease_seconds, rand)
    return following


def record_attempts(conn: sqlite3.Connection, outcomes: list[Outcome], now: float,
                    lease_seconds: float,
                    rand: Callable[[], float] = random.random) -> list[Claim | None]:
    """``record_attempt`` for several bots in one transaction (the delivery
    threads of a process share a commit); the next claims, in order."""
    with transaction(conn):
        return [_record(conn, outcome, now, lease_seconds, rand) for outcome in outcomes]


def _record(conn: sqlite3.Connection, outcome: Outcome, now: float, lease_seconds: float,
            rand: Callable[[], float]) -> Claim | None:
    claim, delivered, error = outcome.claim, outcome.delivered, outcome.error
    if outcome.attempt is not None:
        webhook_deliveries.record(conn, claim.bot_id, claim.update_id, outcome.attempt,
                                  None if delivered else error or "delivery failed")
    if delivered:
        # Delivered is delivered, whoever holds the lease now: the
        # receiver has the update, so it leaves the queue.
        conn.execute("DELETE FROM updates WHERE update_id = ? AND bot_id = ?",
                     (claim.update_id, claim.bot_id))
    row = conn.execute("SELECT generation, failures FROM webhooks"
                       " WHERE bot_id = ? AND lease_token = ?",
                       (claim.bot_id, claim.lease_token)).fetchone()
    if row is None:
        return None  # the lease expired and was taken over: that holder records
    release = "lease_token = NULL, lease_expires_at = NULL, leased_update_id = NULL"
    if row["generation"] != claim.generation:
        conn.execute(f"UPDATE webhooks SET {release} WHERE bot_id = ?", (claim.bot_id,))
        return None
    if not delivered:
        failures = row["failures"] + 1
        conn.execute(
            f"UPDATE webhooks SET {release}, failures = ?, next_attempt_at = ?,"
            " last_error = ?, last_error_at = ? WHERE bot_id = ?",
            (failures, now + retry_delay(failures, rand), error or "delivery failed",
             int(now), claim.bot_id))
        return None
    conn.execute(f"UPDATE webhooks SET {release}, failures = 0, next_attempt_at = 0,"
                 " last_success_at = ? WHERE bot_id = ?", (int(now), claim.bot_id))
    following = _claim_due(conn, now, 1, lease_seconds, claim.bot_id)
    return following[0] if following else None
