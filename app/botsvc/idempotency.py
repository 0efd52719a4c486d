"""Idempotency-Key handling.

Keys are scoped to one bot and kept 24 hours. The fingerprint is the method
plus the canonical form of the parsed request. Stored and replayed: every 2xx
and every 4xx except 401, 409 and 429; never 5xx.

Two shapes of execution share this table:
- a quick method runs, and stores its result, inside the one ``BEGIN
  IMMEDIATE`` that also checked the key: SQLite's single writer serialises
  duplicates, and a crash leaves nothing half-done;
- a long method (media work outside any transaction) first *claims* the key,
  recording the process that runs it, then stores the result. A duplicate
  that finds the claim waits up to 5 s for it, then answers 409 with
  ``in_progress`` and Retry-After.

A claim holds while its process lives. A claim whose process is gone (killed
mid-upload) is released as soon as anyone looks: a duplicate, or the start of
any server process. Only a claim whose process cannot be seen (another pid
namespace, or made before owners were recorded) waits out its lease.
"""
from __future__ import annotations

import hashlib
import json
import sqlite3
from dataclasses import dataclass

from botsvc import clock, owner
from botsvc.contract import KEY, RETENTION_SECONDS
from botsvc.db import transaction
from botsvc.errors import ApiError, ErrorCode, invalid

KEY_PATTERN = KEY
WAIT_FOR_RUNNING_SECONDS = 5.0
CLAIM_LEASE_SECONDS = 900.0   # for claims whose process cannot be checked
IN_PROGRESS_RETRY_AFTER = 1
HEADER = "Idempotency-Key"
ENVIRON_KEY = "HTTP_IDEMPOTENCY_KEY"   # the header as WSGI names it


@dataclass(frozen=True)
class Stored:
    http_status: int
    body: str


def invalid_key():
    return invalid(HEADER, "Idempotency-Key must be 1 to 128 characters of A-Z a-z 0-9 . _ : -")


def fingerprint(method: str, source: dict) -> str:
    canonical = json.dumps([method, source], sort_keys=True, separators=(",", ":"),
                           ensure_ascii=False)
    return hashlib.sha256(canonical.encode("utf-8")).hexdigest()


def is_storable(http_status: int) -> bool:
    return 200 <= http_status < 300 or (400 <= http_status < 500
                                        and http_status not in (401, 409, 429))


def conflict() -> ApiError:
    return ApiError(ErrorCode.IDEMPOTENCY_CONFLICT,
                    "This Idempotency-Key was used with a different method or body")


def in_progress() -> ApiError:
    return ApiError(ErrorCode.IDEMPOTENCY_CONFLICT,
                    "A request with this Idempotency-Key is still being executed",
                    in_progress=True, retry_after=IN_PROGRESS_RETRY_AFTER)


class StillRunning(Exception):
    """The key is claimed by a request that has not finished yet."""


def lookup(conn: sqlite3.Connection, bot_id: int, key: str, method: str, fp: str,
           now: float | None = None) -> Stored | None:
    """The stored result to replay, or None when the key is free (expired keys
    are deleted). Raises IDEMPOTENCY_CONFLICT or StillRunning. Call inside the
    write transaction that will execute and store."""
    now = clock.time() if now is None else now
    row = conn.execute(
        "SELECT bot_id, key, method, fingerprint, state, lease_expires_at, owner, http_status,"
        " response, created_at FROM idempotency_keys WHERE bot_id = ? AND key = ?",
        (bot_id, key)).fetchone()
    if row is None:
        return None
    # Retention follows the service clock; a claim's lease the machine's, since
    # it stands for its holder being alive (advanceClock must not expire it).
    abandoned = row["state"] == "running" and not _claim_holds(row)
    if row["created_at"] < now - RETENTION_SECONDS or abandoned:
        conn.execute("DELETE FROM idempotency_keys WHERE bot_id = ? AND key = ?", (bot_id, key))
        return None
    if row["method"] != method or row["fingerprint"] != fp:
        raise conflict()
    if row["state"] == "running":
        raise StillRunning()
    return Stored(row["http_status"], row["response"])


# This process's claims whose release could not be written (a full disk):
# released by ``release_unreleased`` once the disk takes it, and treated as
# abandoned by a duplicate that reaches this process meanwhile.
_unreleased: set[tuple[int, str]] = set()


def release_later(bot_id: int, key: str) -> None:
    _unreleased.add((bot_id, key))


def release_unreleased(conn: sqlite3.Connection) -> int:
    """Retry the releases the disk refused; the number done."""
    done = 0
    for bot_id, key in list(_unreleased):
        with transaction(conn):
            conn.execute("DELETE FROM idempotency_keys WHERE bot_id = ? AND key = ?"
                         " AND state = 'running' AND owner = ?", (bot_id, key, owner.current()))
        _unreleased.discard((bot_id, key))
        done += 1
    return done


def _claim_holds(row: sqlite3.Row) -> bool:
    if row["owner"] == owner.current() and (row["bot_id"], row["key"]) in _unreleased:
        return False
    alive = owner.is_alive(row["owner"])
    return alive if alive is not None else row["lease_expires_at"] >= clock.machine_time()


def claim(conn: sqlite3.Connection, bot_id: int, key: str, method: str, fp: str) -> None:
    _unreleased.discard((bot_id, key))
    conn.execute(
        "INSERT INTO idempotency_keys (bot_id, key, method, fingerprint, state,"
        " lease_expires_at, owner, created_at) VALUES (?, ?, ?, ?, 'running', ?, ?, ?)",
        (bot_id, key, method, fp, clock.machine_time() + CLAIM_LEASE_SECONDS, owner.current(),
         clock.now()))


def store(conn: sqlite3.Connection, bot_id: int, key: str, method: str, fp: str,
          http_status: int, body: str) -> None:
    """Record a finished result (replacing a claim), if the status is storable."""
    if not is_storable(http_status):
        release(conn, bot_id, key)
        return
    conn.execute(
        "INSERT INTO idempotency_keys (bot_id, key, method, fingerprint, state, http_status,"
        " response, created_at) VALUES (?, ?, ?, ?, 'done', ?, ?, ?)"
        " ON CONFLICT (bot_id, key) DO UPDATE SET state = 'done', lease_expires_at = NULL,"
        " http_status = excluded.http_status, response = excluded.response",
        (bot_id, key, method, fp, http_status, body, clock.now()))


def release(conn: sqlite3.Connection, bot_id: int, key: str) -> None:
    conn.execute("DELETE FROM idempotency_keys WHERE bot_id = ? AND key = ? AND state = 'running'",
                 (bot_id, key))


def release_abandoned_claims(conn: sqlite3.Connection) -> int:
    """Release every claim whose process is gone (at the start of a process)."""
    rows = conn.execute("SELECT bot_id, key, lease_expires_at, owner FROM idempotency_keys"
                        " WHERE state = 'running'").fetchall()
    abandoned = [(row["bot_id"], row["key"]) for row in rows if not _claim_holds(row)]
    for bot_id, key in abandoned:
        release(conn, bot_id, key)
    return len(abandoned)


def delete_expired(conn: sqlite3.Connection, now: float | None = None) -> int:
    now = clock.time() if now is None else now
    return conn.execute("DELETE FROM idempotency_keys WHERE created_at < ?",
                        (int(now - RETENTION_SECONDS),)).rowcount
