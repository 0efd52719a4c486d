"""The bot's call log (getBotCalls): what each /v2 call of a known bot did,
kept for the newest 1,000 calls of the bot and at most 24 hours of service
time, and per bot the count of its empty polls and the date of its last poll.

This module holds the bounds and reads; app/botsvc/domain/call_records.py
stores. What a record holds is decided where the call is answered
(app/botsvc/call_log/capture.py) and written, best effort, by
app/botsvc/call_log/writer.py. Both bounds are applied exactly when reading; the
rows past them are removed in bulk as a bot writes (``call_records.write``,
once TRIM_SLACK rows are past its bound) and by the clean-up job
(``call_records.delete_expired``), so the table stays near 1,000 rows a bot
however long the history, and no query here walks more than that or than
what it removes.
"""
from __future__ import annotations

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
# A record is kept for the contract's day of service time (RETENTION_SECONDS):
# ``oldest_kept_date`` and ``oldest_kept_call_id`` are the bounds, read there.
# params and result are each kept when their compact JSON is at most this
# many bytes of UTF-8, and left out (``truncated: true``) otherwise.
BODY_MAX_BYTES = CALL_LOG_BODY_MAX_BYTES
# With detail, params left out for size keep each field cut to this many bytes.
PREVIEW_MAX_BYTES = CALL_LOG_PREVIEW_MAX_BYTES


class CallRecord(NamedTuple):
    """One call, as plain values in the order of the table's columns.
    ``params`` and ``result`` are compact JSON (UTF-8) already within
    BODY_MAX_BYTES, or None; so is ``detail``, what getBotCalls adds with
    ``detail: true`` (error_parameters, injected, params_preview, cut_fields).
    ``started_ns`` and ``answered_ns``: when the call arrived and when its
    answer was made (``clock.order_stamp``), never shown: an export's order.
    """
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
    started_ns: int | None = None
    answered_ns: int | None = None


def within_bound(compact_json: bytes) -> bytes | None:
    """The JSON itself when it may be kept, None when it is over the bound."""
    return compact_json if len(compact_json) <= BODY_MAX_BYTES else None


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
