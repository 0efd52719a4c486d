"""Storing the bot's call log (app/botsvc/domain/call_log.py holds its bounds
and reads it): records written in their order with each bot's count beside
them, a bot trimmed in bulk once TRIM_SLACK rows are past its bound, and the
records past the retention removed by the clean-up job.
"""
from __future__ import annotations

import functools
import sqlite3

from botsvc.domain.call_log import KEPT_PER_BOT, CallRecord, oldest_kept_date
from botsvc.pagination import SQLITE_MAX_INTEGER

# A bot's oldest rows are removed in bulk once this many are past the bound.
TRIM_SLACK = 100


def write(conn: sqlite3.Connection, records: list[CallRecord],
          polls: dict[int, tuple[int, int]]) -> list[int]:
    """In the caller's transaction: the records, in their order (call_id
    follows it), and per bot ``(empty polls to add, date of a poll)``; then
    each bot trimmed back to its bound once TRIM_SLACK rows past it. A bot
    removed meanwhile (``reset``) gets nothing. Returns the bots written."""
    written: dict[int, int] = {}
    for record in records:
        written[record.bot_id] = written.get(record.bot_id, 0) + 1
    kept = {}
    for bot_id in written.keys() | polls.keys():
        empty, date = polls.get(bot_id, (0, None))
        counts = (bot_id, written.get(bot_id, 0), empty)
        row = (conn.execute(_COUNT, counts) if date is None
               else conn.execute(_COUNT_POLLED, (*counts, date))).fetchone()
        if row is not None:
            kept[bot_id] = row[0]
    _insert(conn, [record for record in records if record.bot_id in kept])
    for bot_id, count in kept.items():
        if count > KEPT_PER_BOT + TRIM_SLACK:
            _trim(conn, bot_id, count - KEPT_PER_BOT)
    return list(kept)


_UPSERT_COUNTS = (
    "INSERT INTO bot_call_counts (bot_id, calls_kept, empty_polls, last_poll_at)"
    " SELECT ?1, ?2, ?3, {date} WHERE EXISTS (SELECT 1 FROM bots WHERE id = ?1)"
    " ON CONFLICT (bot_id) DO UPDATE SET calls_kept = calls_kept + excluded.calls_kept,"
    " empty_polls = empty_polls + excluded.empty_polls, last_poll_at = {last_poll}"
    " RETURNING calls_kept")
_COUNT = _UPSERT_COUNTS.format(date="NULL", last_poll="last_poll_at")
_COUNT_POLLED = _UPSERT_COUNTS.format(
    date="?4", last_poll="max(coalesce(last_poll_at, ?4), ?4)")
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


def _trim(conn: sqlite3.Connection, bot_id: int, excess: int) -> None:
    """Remove the bot's ``excess`` oldest records, walking only those."""
    removed = conn.execute(
        "DELETE FROM bot_calls WHERE call_id IN (SELECT call_id FROM bot_calls"
        " WHERE bot_id = ? ORDER BY call_id LIMIT ?)", (bot_id, excess)).rowcount
    conn.execute("UPDATE bot_call_counts SET calls_kept = calls_kept - ? WHERE bot_id = ?",
                 (removed, bot_id))


def delete_expired(conn: sqlite3.Connection, now: float) -> int:
    """Remove the records older than 24 hours. Records are written in
    (nearly) the order their calls arrived, so the expired ones are those
    before the oldest record still in date: found, and counted per bot,
    walking the primary key from the oldest row, at the cost of the rows it
    removes. A record written late, behind a newer one, waits for the next
    pass."""
    first_kept = conn.execute(
        "SELECT coalesce((SELECT call_id FROM bot_calls WHERE date >= ? ORDER BY call_id"
        " LIMIT 1), ?)", (oldest_kept_date(now), SQLITE_MAX_INTEGER)).fetchone()[0]
    expired = conn.execute(
        "SELECT bot_id, count(*) FROM bot_calls NOT INDEXED WHERE call_id < ? GROUP BY bot_id",
        (first_kept,)).fetchall()
    conn.executemany("UPDATE bot_call_counts SET calls_kept = calls_kept - ? WHERE bot_id = ?",
                     [(count, bot_id) for bot_id, count in expired])
    return conn.execute("DELETE FROM bot_calls WHERE call_id < ?", (first_kept,)).rowcount
