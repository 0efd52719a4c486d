"""The service clock: the one source of every time the service
shows or keeps.

Service time is the machine's wall clock plus an offset of whole seconds that
``advanceClock`` moves forward and ``reset`` puts back to 0. The offset lives
in SQLite (``platform.clock_offset``), so every worker process and every
restart sees the same clock. Reading it must cost nothing per request, so each
process keeps a copy that is refreshed by queries it makes anyway:

- ``authenticate_bot`` reads the platform row on every /v2 request and passes
  the offset to ``remember_offset``;
- every background job pass starts with ``refresh`` (``botsvc.jobs.runner.run_job``),
  which bounds a process's staleness by its fastest tick (0.5 s);
- the operator API, the signed download route and the CLI ``refresh`` too;
- the process serving ``advanceClock`` remembers its new offset at once.

What follows the service clock: message, update, chat, callback, file, bot,
user and broadcast times, the 24-hour retention of updates, idempotency keys
and webhook delivery records, rate-limit windows, the webhook retry schedule
and its last_error_at/last_success_at, signed download URL expiry.

What does not (``machine_time``): leases, whose point is the holder's
liveness (a jump of the service clock must not make a delivery or an upload
in flight look abandoned), the intervals of periodic jobs, and the age of
leftover files on disk (their mtimes are the machine's). Durations inside one
process use ``time.monotonic``.
"""
from __future__ import annotations

import sqlite3
import time as _time

MAX_ADVANCE_SECONDS = 365 * 24 * 3600
# The newest moves of the clock kept (clock_moves): what a view needs to
# mark the records dated after each.
MOVES_KEPT = 100

# The machine's wall clock. Tests substitute it to freeze or move time for the
# whole service (service time and leases alike).
machine_clock = _time.time

# This process's copy of platform.clock_offset.
_offset = 0


def order_stamp() -> int:
    """Nanoseconds of the machine's wall clock (``time.time_ns``), to tell
    what happened before what where dates say only the second (an export
    places the bot's reactions by them, docs/export.md). Never the service
    clock (advanceClock moves it) nor ``machine_clock`` (tests freeze it):
    one clock every worker process reads alike, so two stamps taken on
    either side of a causal link (a row committed, then read; an answer
    made, then received and acted on) are in that order. A restart, or the
    database restored on another machine, keeps that order, as a boot's
    monotonic clock would not; only a step back of the machine's own clock
    (not a slew) could break it, for the moments it covers."""
    return _time.time_ns()


def machine_time() -> float:
    """The machine's wall clock, for leases and file ages (not service time)."""
    return machine_clock()


def time() -> float:
    """Service time in Unix seconds (float, for rate windows and schedules)."""
    return machine_clock() + _offset


def now() -> int:
    """Service time in whole Unix seconds: every date the service shows."""
    return int(time())


def offset() -> int:
    """This process's current idea of the offset (as last refreshed)."""
    return _offset


def remember_offset(value: int) -> None:
    """Take the offset just read from the platform row."""
    global _offset
    _offset = int(value)


def refresh(conn: sqlite3.Connection) -> int:
    """Read the shared offset (one primary-key read) and remember it."""
    remember_offset(conn.execute("SELECT clock_offset FROM platform WHERE id = 1").fetchone()[0])
    return _offset


def reading() -> dict:
    """``{now, offset}`` as getClock and advanceClock answer."""
    return {"now": now(), "offset": _offset}


def advance(conn: sqlite3.Connection, seconds: int) -> int:
    """Move the shared clock ahead by ``seconds``, in the caller's write
    transaction; remembered here once the transaction commits."""
    value = conn.execute("UPDATE platform SET clock_offset = clock_offset + ? WHERE id = 1"
                         " RETURNING clock_offset", (seconds,)).fetchone()[0]
    # Remembered for the views that mark what was dated after a move.
    conn.execute("INSERT INTO clock_moves (moved_at, clock_offset) VALUES (?, ?)",
                 (int(machine_clock()) + value, value))
    conn.execute("DELETE FROM clock_moves WHERE rowid <= (SELECT MAX(rowid) FROM clock_moves)"
                 " - ?", (MOVES_KEPT,))
    conn.after_commit(lambda: remember_offset(value))
    return value


def moves(conn: sqlite3.Connection) -> list[dict]:
    """The clock's kept moves, oldest first: ``[{moved_at, offset}]``. A
    record dated at or after a move's ``moved_at`` (and before the next's)
    was dated with its ``offset``; one dated before the first, with none."""
    rows = conn.execute("SELECT moved_at, clock_offset FROM clock_moves ORDER BY rowid"
                        " DESC LIMIT ?", (MOVES_KEPT,)).fetchall()
    return [{"moved_at": row[0], "offset": row[1]} for row in reversed(rows)]


def set_offset(conn: sqlite3.Connection, value: int) -> None:
    """Set the shared offset (``reset`` puts it back to 0), in the caller's
    write transaction; remembered here once it commits."""
    conn.execute("UPDATE platform SET clock_offset = ? WHERE id = 1", (value,))
    conn.after_commit(lambda: remember_offset(value))
