"""Sandbox sessions: a random id the sandbox keeps in an HttpOnly cookie, its
SHA-256 in SQLite.

Server-side rows rather than a signed cookie, so that signing out ends the
session everywhere (a copied cookie dies with it) and idle sessions expire.
Each row remembers an HMAC of the admin token it was opened with; a session
whose token is no longer the configured one is over. Plain functions on a
connection, like the domain's.
"""
from __future__ import annotations

import hashlib
import hmac
import secrets
import sqlite3
from dataclasses import dataclass

from botsvc import clock
from botsvc.db import transaction
from botsvc.errors import ApiError, ErrorCode

# Idle sessions end after this long; a session is at most this old however busy.
IDLE_SECONDS = 12 * 3600
MAX_AGE_SECONDS = 7 * 24 * 3600
# last_seen_at is refreshed at most this often, so polling does not write.
TOUCH_EVERY_SECONDS = 300


@dataclass(frozen=True)
class Session:
    id_hash: bytes
    csrf_token: str
    seen_at: int = 0        # last_seen_at as read


def _hash(session_id: str) -> bytes:
    return hashlib.sha256(session_id.encode("utf-8", "surrogateescape")).digest()


def admin_fingerprint(secret_key: bytes, admin_token: str) -> bytes:
    """What a session keeps of the admin token: an HMAC under the signing key,
    so a copy of the database does not help guess a weak token offline."""
    return hmac.new(secret_key, b"sandbox-admin-token\0"
                    + admin_token.encode("utf-8", "surrogateescape"), hashlib.sha256).digest()


def open_session(conn: sqlite3.Connection, fingerprint: bytes) -> tuple[str, Session]:
    """A new session: (the cookie value, the session). Expired rows go too."""
    session_id = secrets.token_urlsafe(32)
    at = int(clock.machine_time())  # a person's time: advanceClock must not sign out
    session = Session(_hash(session_id), secrets.token_urlsafe(32), at)
    with transaction(conn):
        conn.execute("DELETE FROM sandbox_sessions WHERE last_seen_at < ? OR created_at < ?",
                     (at - IDLE_SECONDS, at - MAX_AGE_SECONDS))
        conn.execute("INSERT INTO sandbox_sessions (id_hash, csrf_token, admin_fingerprint,"
                     " created_at, last_seen_at) VALUES (?, ?, ?, ?, ?)",
                     (session.id_hash, session.csrf_token, fingerprint, at, at))
    return session_id, session


def find_session(conn: sqlite3.Connection, session_id: str | None,
                 fingerprint: bytes) -> Session | None:
    """The live session of this cookie value, or None (unknown, expired, or
    opened with another admin token). It only reads: it runs before the
    request's body is read, and a request may be served twice from its first
    byte (docs/DEVELOPING.md). An expired row goes at the next sign-in."""
    if not session_id or len(session_id) > 128:
        return None
    id_hash = _hash(session_id)
    row = conn.execute("SELECT * FROM sandbox_sessions WHERE id_hash = ?", (id_hash,)).fetchone()
    if row is None:
        return None
    at = int(clock.machine_time())  # a person's time: advanceClock must not sign out
    if (not hmac.compare_digest(row["admin_fingerprint"], fingerprint)
            or row["last_seen_at"] < at - IDLE_SECONDS or row["created_at"] < at - MAX_AGE_SECONDS):
        return None
    return Session(id_hash, row["csrf_token"], row["last_seen_at"])


def note_seen(conn: sqlite3.Connection, session: Session) -> None:
    """The session was used: its last_seen_at is refreshed (at most every
    TOUCH_EVERY_SECONDS), once the request has been answered."""
    at = int(clock.machine_time())
    if session.seen_at >= at - TOUCH_EVERY_SECONDS:
        return
    try:
        with transaction(conn):
            conn.execute("UPDATE sandbox_sessions SET last_seen_at = ? WHERE id_hash = ?",
                         (at, session.id_hash))
    except ApiError as error:
        # A full disk: the pages still show (reads go on); the session
        # just counts as idle since its last recorded visit.
        if error.code != ErrorCode.STORAGE_FULL:
            raise


def close_session(conn: sqlite3.Connection, session_id: str | None) -> None:
    if session_id:
        with transaction(conn):
            conn.execute("DELETE FROM sandbox_sessions WHERE id_hash = ?", (_hash(session_id),))


def csrf_matches(session: Session, presented: str | None) -> bool:
    return presented is not None and hmac.compare_digest(
        presented.encode("utf-8", "surrogateescape"), session.csrf_token.encode("ascii"))
