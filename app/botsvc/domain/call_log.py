"""The bot's call log (getBotCalls): what each /v2 call of a known bot did,
kept for the newest 1,000 calls of the bot and at most 24 hours of service
time, and per bot the count of its empty polls and the date of its last poll.

This module stores and reads; what a record holds is decided where the call
is answered (app/botsvc/call_log/capture.py) and written, best effort, by
app/botsvc/call_log/writer.py. Both bounds are applied exactly when reading; the
rows past them are removed in bulk as a bot writes (``write``, once
TRIM_SLACK rows are past its bound) and by the clean-up job
(``delete_expired``), so the table stays near 1,000 rows a bot however long
the history, and no query here walks more than that or than what it removes.
"""
from __future__ import annotations

import functools
import json
import sqlite3
from typing import NamedTuple

from botsvc.contract import (
    CALL_LOG_BODY_MAX_BYTES,
    CALL_LOG_KEPT_CALLS,
    CALL_LOG_PREVIEW_MAX_BYTES,
    RETENTION_SECONDS,
)
from botsvc.db import transaction
from botsvc.pagination import SQLITE_MAX_INTEGER, ScopedIntCursor, page

KEPT_PER_BOT = CALL_LOG_KEPT_CALLS
# A record is kept for the contract's day of service time (RETENTION_SECONDS);
# whoever reads the log's bounds asks ``oldest_kept_date`` and
# ``oldest_kept_call_id``, never this arithmetic again.
# params and result are each kept when their compact JSON is at most this
# many bytes of UTF-8, and left out (``truncated: true``) otherwise.
BODY_MAX_BYTES = CALL_LOG_BODY_MAX_BYTES
# With detail, params left out for size keep each field cut to this many bytes.
PREVIEW_MAX_BYTES = CALL_LOG_PREVIEW_MAX_BYTES
# A bot's oldest rows are removed in bulk once this many are past the bound.
TRIM_SLACK = 100


class CallRecord(NamedTuple):
    """One call, as plain values in the order of the table's columns.
    ``params`` and ``result`` are compact JSON (UTF-8) already within
    BODY_MAX_BYTES, or None; so is ``detail``, what getBotCalls adds with
    ``detail: true`` (error_parameters, injected, params_preview, cut_fields)."""
    bot_id: int
    date: int
    method: str
    http_status: int
    duration_ms: float
    request_id: str
    error_code: str | None
    description: str | None
    idempotency_key: str | None
    replayed: bool
    params: bytes | None
    result: bytes | None
    truncated: bool
    detail: bytes | None = None


def within_bound(compact_json: bytes) -> bytes | None:
    """The JSON itself when it may be kept, None when it is over the bound."""
    return compact_json if len(compact_json) <= BODY_MAX_BYTES else None


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
            "replayed", "truncated")
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
               1 if record.truncated else 0]
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


class CallFilter(NamedTuple):
    """getBotCalls' optional filters (None / False: not asked)."""
    method: str | None = None
    failures_only: bool = False
    after_call_id: int | None = None   # only records newer than this call
    chat_id: str | None = None         # calls whose params name this chat
    since: int | None = None           # dates, inclusive (service clock)
    until: int | None = None
    search: str | None = None          # in params or result, case-insensitively


NO_FILTER = CallFilter()


def calls_page(conn: sqlite3.Connection, bot_id: int, limit: int, cursor: str | None,
               now: float, *, where: CallFilter = NO_FILTER, detail: bool = False) -> dict:
    """getBotCalls: the bot's kept records, newest first, with its poll
    counts. Every query walks the bot's own index range (its bot_id and the
    call_ids within its bound), so at most its 1,100 rows, whatever filters."""
    oldest_kept = max(oldest_kept_call_id(conn, bot_id),
                      0 if where.after_call_id is None else where.after_call_id + 1)
    sql, extra = _filter_sql(conn, where)

    def fetch(before: int | None, n: int):
        return conn.execute(
            f"SELECT * FROM bot_calls WHERE bot_id = ? AND call_id < ? AND call_id >= ?"
            f" AND date >= ?{sql} ORDER BY call_id DESC LIMIT ?",
            (bot_id, SQLITE_MAX_INTEGER if before is None else before, oldest_kept,
             oldest_kept_date(now), *extra, n)).fetchall()

    rows, next_cursor = page(fetch, lambda row: row["call_id"], limit, cursor,
                             ScopedIntCursor(f"bot-calls:{bot_id}"))
    polls = conn.execute("SELECT empty_polls, last_poll_at FROM bot_call_counts"
                         " WHERE bot_id = ?", (bot_id,)).fetchone()
    return {"calls": [render(row, detail=detail) for row in rows], "next_cursor": next_cursor,
            "empty_polls": polls["empty_polls"] if polls else 0,
            "last_poll_at": polls["last_poll_at"] if polls else None}


def _filter_sql(conn: sqlite3.Connection, where: CallFilter) -> tuple[str, tuple]:
    """The filters' conditions (each after the bot's range) and values."""
    sql, values = "", []
    if where.method is not None:
        sql += " AND method = ?"
        values.append(where.method)
    if where.failures_only:
        sql += " AND http_status >= 400"
    if where.since is not None:
        sql += " AND date >= ?"
        values.append(where.since)
    if where.until is not None:
        sql += " AND date <= ?"
        values.append(where.until)
    if where.chat_id is not None:
        # A record kept whole names it in params; one cut for size, in its preview.
        sql += (" AND coalesce(json_extract(params, '$.chat_id'),"
                " json_extract(detail, '$.params_preview.chat_id')) = ?")
        values.append(where.chat_id)
    if where.search is not None:
        # SQLite's lower() and LIKE fold ASCII only: Python folds the rest.
        conn.create_function("botsvc_contains", 2, _contains, deterministic=True)
        sql += (" AND (botsvc_contains(params, ?) OR botsvc_contains(result, ?)"
                " OR botsvc_contains(json_extract(detail, '$.params_preview'), ?))")
        values += [where.search.casefold()] * 3
    return sql, tuple(values)


def _contains(text, needle: str) -> bool:
    return text is not None and needle in (text if isinstance(text, str)
                                           else bytes(text).decode(errors="replace")).casefold()


def kept_call(conn: sqlite3.Connection, bot_id: int, call_id: int, now: float) -> dict | None:
    """One kept record of the bot (within both bounds), rendered; else None."""
    row = conn.execute("SELECT * FROM bot_calls WHERE call_id = ? AND bot_id = ? AND call_id >= ?"
                       " AND date >= ?", (call_id, bot_id, oldest_kept_call_id(conn, bot_id),
                                          oldest_kept_date(now))).fetchone()
    return None if row is None else render(row)


def redact(conn: sqlite3.Connection, bot_id: int, request_id: str, secret: str,
           mark: str) -> None:
    """Replace ``secret`` by ``mark`` in the record of one call (by its
    request id): for a call the service made as the bot without its token
    (resendCall), whose secret was found in its answer only once recorded."""
    with transaction(conn):
        conn.execute(
            "UPDATE bot_calls SET params = replace(params, ?2, ?3), result = replace(result, ?2,"
            " ?3), description = replace(description, ?2, ?3) WHERE bot_id = ?1"
            " AND request_id = ?4", (bot_id, secret, mark, request_id))


def oldest_kept_call_id(conn: sqlite3.Connection, bot_id: int) -> int:
    """The bot's oldest record within its newest KEPT_PER_BOT (0: it has
    fewer): older ones are past the bound, whether removed yet or not."""
    row = conn.execute("SELECT call_id FROM bot_calls WHERE bot_id = ? ORDER BY call_id DESC"
                       " LIMIT 1 OFFSET ?", (bot_id, KEPT_PER_BOT - 1)).fetchone()
    return row[0] if row else 0


def oldest_kept_date(now: float) -> int:
    """The oldest ``date`` a record may have and still be kept at ``now``
    (service time): the call log's retention."""
    return int(now - RETENTION_SECONDS)


def render(row: sqlite3.Row, *, detail: bool = False) -> dict:
    """A record with exactly the fields of the contract, the optional ones
    only when they hold something; with ``detail``, also what the record
    keeps beyond them (error_parameters, injected, params_preview,
    cut_fields)."""
    record = {"call_id": row["call_id"], "date": row["date"], "method": row["method"],
              "ok": row["http_status"] < 400, "http_status": row["http_status"],
              "duration_ms": round(row["duration_ms"], 2), "request_id": row["request_id"]}
    for name in ("error_code", "description", "idempotency_key"):
        if row[name] is not None:
            record[name] = row[name]
    record["replayed"] = bool(row["replayed"])
    for name in ("params", "result"):
        if row[name] is not None:
            record[name] = json.loads(row[name])
    if row["truncated"]:
        record["truncated"] = True
    if detail and row["detail"] is not None:
        record.update(json.loads(row["detail"]))
    return record
