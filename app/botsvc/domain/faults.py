"""Injected faults (injectFault, clearFaults): failures on demand,
so a bot's own tests can see it back off on 429, survive a 500 or a slow
answer.

A fault is ``(bot, method) -> error_code?, delay_ms, remaining``. The /v2
pipeline looks for one right after the token, and only when the token query
said the bot has any (``bots.has_faults``), so a bot without faults pays no
extra query. Each call claims one of the ``remaining`` in its own short
``BEGIN IMMEDIATE``, so ``count`` is exact however many processes serve the
bot; the delay is then waited out with no transaction open.
"""
from __future__ import annotations

import sqlite3
import time
from dataclasses import dataclass

from botsvc.db import transaction
from botsvc.domain.bots import require_bot
from botsvc.errors import ApiError, ErrorCode

INJECTABLE_CODES = (
    ErrorCode.RATE_LIMITED, ErrorCode.BOT_BLOCKED, ErrorCode.BOT_NOT_STARTED,
    ErrorCode.CHAT_NOT_FOUND, ErrorCode.MESSAGE_NOT_FOUND, ErrorCode.BOT_DISABLED,
    ErrorCode.PLATFORM_DISABLED, ErrorCode.DEPENDENCY_UNAVAILABLE, ErrorCode.INTERNAL_ERROR,
)
MAX_DELAY_MS = 30000
MAX_COUNT = 1000


@dataclass(frozen=True)
class Fault:
    error_code: ErrorCode | None
    delay_ms: int


class InjectedFault(ApiError):
    """The error a fault asked for: its usual HTTP status, ``injected: true``;
    RATE_LIMITED with ``retry_after`` 1 and ``Retry-After: 1``."""

    def __init__(self, code: ErrorCode):
        extra = {"retry_after": 1} if code is ErrorCode.RATE_LIMITED else {}
        super().__init__(code, f"Injected fault: {code.value}", injected=True, **extra)

    def headers(self) -> dict[str, str]:
        return {"Retry-After": "1"} if self.code is ErrorCode.RATE_LIMITED else {}


def inject(conn: sqlite3.Connection, bot_id: int, method: str, error_code: str | None,
           delay_ms: int, count: int) -> None:
    """The bot's next ``count`` calls of ``method`` get this fault. A new
    fault for the same bot and method replaces the one still waiting."""
    with transaction(conn):
        require_bot(conn, bot_id)
        conn.execute(
            "INSERT INTO faults (bot_id, method, error_code, delay_ms, remaining)"
            " VALUES (?, ?, ?, ?, ?) ON CONFLICT (bot_id, method) DO UPDATE SET"
            " error_code = excluded.error_code, delay_ms = excluded.delay_ms,"
            " remaining = excluded.remaining", (bot_id, method, error_code, delay_ms, count))
        conn.execute("UPDATE bots SET has_faults = 1 WHERE id = ?", (bot_id,))


def clear(conn: sqlite3.Connection, bot_id: int) -> None:
    with transaction(conn):
        require_bot(conn, bot_id)
        conn.execute("DELETE FROM faults WHERE bot_id = ?", (bot_id,))
        conn.execute("UPDATE bots SET has_faults = 0 WHERE id = ?", (bot_id,))


def armed(conn: sqlite3.Connection, bot_id: int) -> list[dict]:
    """The bot's faults still waiting, by method: ``{method, error_code (or
    null: a delay alone), delay_ms, remaining}``."""
    rows = conn.execute("SELECT method, error_code, delay_ms, remaining FROM faults"
                        " WHERE bot_id = ? ORDER BY method", (bot_id,))
    return [dict(row) for row in rows]


def take(conn: sqlite3.Connection, bot_id: int, method: str) -> Fault | None:
    """Claim one faulted call of ``method``, or None. Atomic across processes."""
    if conn.execute("SELECT 1 FROM faults WHERE bot_id = ? AND method = ?",
                    (bot_id, method)).fetchone() is None:
        return None   # a fault of another method: no need for the write lock
    with transaction(conn):
        row = conn.execute("SELECT error_code, delay_ms, remaining FROM faults"
                           " WHERE bot_id = ? AND method = ?", (bot_id, method)).fetchone()
        if row is None:
            return None
        if row["remaining"] > 1:
            conn.execute("UPDATE faults SET remaining = remaining - 1"
                         " WHERE bot_id = ? AND method = ?", (bot_id, method))
        else:
            conn.execute("DELETE FROM faults WHERE bot_id = ? AND method = ?", (bot_id, method))
            conn.execute("UPDATE bots SET has_faults = EXISTS (SELECT 1 FROM faults"
                         " WHERE bot_id = ?) WHERE id = ?", (bot_id, bot_id))
    code = ErrorCode(row["error_code"]) if row["error_code"] is not None else None
    return Fault(code, row["delay_ms"])


def intercept(conn: sqlite3.Connection, bot_id: int, method: str) -> None:
    """Apply the bot's next fault for ``method``, if any: hold the call, then
    raise its error (the call then takes no rate and is stored under no
    Idempotency-Key, as it never reaches them) or let it run normally."""
    fault = take(conn, bot_id, method)
    if fault is not None:
        apply(fault)


def apply(fault: Fault) -> None:
    """Hold the call for the fault's delay, then raise its error, if any."""
    if fault.delay_ms:
        time.sleep(fault.delay_ms / 1000)
    if fault.error_code is not None:
        raise InjectedFault(fault.error_code)
