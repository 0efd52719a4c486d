"""Storing the bot's call log (app/botsvc/domain/call_log.py holds its bounds
and reads it): records written in their order, a bot trimmed back to its
bound in bulk when its writer says it is due (about every TRIM_SLACK
records: app/botsvc/call_log/writer.py), and the records past the retention
removed by the clean-up job.

Nothing is counted per record: the count of each bot's rows kept beside
them (an upsert with RETURNING per call) was over half of what the log
cost a lone call (docs/call-log.md), and the bound itself is one index walk
away (``oldest_kept_call_id``), so a trim finds it when it runs.
"""
from __future__ import annotations

import functools
import sqlite3

from botsvc.domain.call_log import CallRecord, oldest_kept_call_id, oldest_kept_date
from botsvc.pagination import SQLITE_MAX_INTEGER

# A bot's rows past its bound are removed in bulk about this often (records
# written for it by one process): the table holds at most this many past the
# bound per process writing, and a trim removes about this many rows.
TRIM_SLACK = 100


def write(conn: sqlite3.Connection, records: list[CallRecord],
          polls: dict[int, tuple[int, int]], trim: tuple[int, ...] | list[int] = ()) -> None:
    """In the caller's transaction: the records, in their order (call_id
    follows it), and per bot ``(empty polls to add, date of a poll)``; then
    each bot of ``trim`` cut back to its bound. A bot removed meanwhile
    (``reset``) gets nothing."""
    _insert(conn, records)
    for bot_id, (empty, date) in polls.items():
        conn.execute(_COUNT_POLL, (bot_id, empty, date))
    for bot_id in trim:
        _trim(conn, bot_id)


# A record or poll of a bot that reset removed meanwhile is dropped by the
# tables' triggers (migration 0018): no foreign keys here (migration 0011).
_COUNT_POLL = (
    "INSERT INTO bot_call_counts (bot_id, empty_polls, last_poll_at) VALUES (?1, ?2, ?3)"
    " ON CONFLICT (bot_id) DO UPDATE SET empty_polls = empty_polls + excluded.empty_polls,"
    " last_poll_at = max(coalesce(last_poll_at, ?3), ?3)")
# Always there; then each optional column that has a value. Python's sqlite3
# adapts every parameter that is not an int, float or str (None, bool,
# bytes) through an attribute lookup that raises and clears an exception:
# half the cost of an insert, measured. So a record is bound as ints and
# text only, under the statement of its shape.
_COLUMNS = ("bot_id", "date", "method", "http_status", "duration_ms", "request_id",
            "replayed", "truncated", "started_ns", "answered_ns")
_OPTIONAL = ("error_code", "description", "idempotency_key", "params", "result", "detail")


def _insert(conn: sqlite3.Connection, records: list[CallRecord]) -> None:
    """The records in their order, each run of one shape by one statement."""
    shape, rows = None, []
    for record in records:
        present = (record.error_code is not None, record.description is not None,
                   record.idempotency_key is not None, record.params is not None,
                   record.result is not None, record.detail is not None)
        if present != shape:
            if rows:
                conn.executemany(_insert_statement(shape), rows)
            shape, rows = present, []
        row = [record.bot_id, record.date, record.method, record.http_status,
               record.duration_ms, record.request_id, 1 if record.replayed else 0,
               1 if record.truncated else 0, record.started_ns, record.answered_ns]
        if present[0]:
            row.append(record.error_code)
        if present[1]:
            row.append(record.description)
        if present[2]:
            row.append(record.idempotency_key)
        if present[3]:
            row.append(record.params.decode())
        if present[4]:
            row.append(record.result.decode())
        if present[5]:
            row.append(record.detail.decode())
        rows.append(row)
    if rows:
        conn.executemany(_insert_statement(shape), rows)


@functools.cache
def _insert_statement(present: tuple[bool, ...]) -> str:
    columns = _COLUMNS + tuple(name for name, there in zip(_OPTIONAL, present, strict=True)
                               if there)
    return (f"INSERT INTO bot_calls ({', '.join(columns)})"
            f" VALUES ({', '.join('?' * len(columns))})")


def _trim(conn: sqlite3.Connection, bot_id: int) -> None:
    """Remove the bot's records older than its newest KEPT_PER_BOT: the
    bound's index entries walked, then only the rows removed."""
    oldest_kept = oldest_kept_call_id(conn, bot_id)
    if oldest_kept:
        conn.execute("DELETE FROM bot_calls WHERE bot_id = ? AND call_id < ?",
                     (bot_id, oldest_kept))


def delete_expired(conn: sqlite3.Connection, now: float) -> int:
    """Remove the records older than 24 hours. Records are written in
    (nearly) the order their calls arrived, so the expired ones are those
    before the oldest record still in date: found walking the primary key
    from the oldest row, at the cost of the rows it removes. A record
    written late, behind a newer one, waits for the next pass."""
    first_kept = conn.execute(
        "SELECT coalesce((SELECT call_id FROM bot_calls WHERE date >= ? ORDER BY call_id"
        " LIMIT 1), ?)", (oldest_kept_date(now), SQLITE_MAX_INTEGER)).fetchone()[0]
    return conn.execute("DELETE FROM bot_calls WHERE call_id < ?", (first_kept,)).rowcount
