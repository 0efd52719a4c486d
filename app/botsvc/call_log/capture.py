"""The seam between the /v2 dispatcher and the call log (docs/call-log.md).

Every call made with a valid token (a disabled bot's, a disabled platform's,
an unknown method's under its requested name) is recorded once its answer is
known, from what answering it already produced. The dispatcher describes
the call in one value, ``CallFacts``, and hands it over twice:
``call_started`` as the call begins (what was called, the Idempotency-Key
header), ``call_ended`` once it has its answer, the value then holding who
made it (the token's bot), what it read (the method's entry and the parsed
body), the fault injected into it, and the answer. This module takes what it
needs from it; the dispatcher knows nothing of records.

A call hands its end inside its own write transaction when its answer is
made there (``conn`` given): while this process answers its calls one at a
time, the record is written there, with the call's rows (a transaction of
its own cost a COMMIT, some 0.2 ms of CPU, per call). Every call hands its
end again as its request is torn down (before the answer is sent; with no
answer for a call parked until its body has arrived, to run again whole):
that ends it for the writer, and makes its record from the answer when the
first hand-over wrote none, or wrote one its transaction then rolled back (a
full disk at COMMIT: the record is made from the STORAGE_FULL it answers).
The record itself is made by botsvc.call_log.record; a getUpdates that
succeeds with no update is counted, not recorded. A record not written with
the call's rows is handed to the process's CallLogWriter, which writes it
before the answer is sent when it can do so at once: how is the writer's
business.
"""
from __future__ import annotations

import logging
import sqlite3

from flask import Response, current_app, g
from flask.globals import app_ctx

from botsvc import logs
from botsvc.call_log import record
from botsvc.call_log.facts import CallFacts
from botsvc.call_log.writer import EXTENSION, CallLogWriter
from botsvc.domain import call_records
from botsvc.envelope import REPLAY_HEADER, failure_in, failure_of
from botsvc.errors import ApiError

logger = logging.getLogger(__name__)
REDACTED = record.REDACTED


class _Logged:
    """The call log's own note of a call it is recording."""
    __slots__ = ("writer", "written", "ended")

    def __init__(self, writer: CallLogWriter):
        self.writer = writer
        self.written = False   # the record went with the call's own transaction
        self.ended = False


def call_started(facts: CallFacts) -> None:
    """A /v2 call begins (the dispatcher's first step)."""
    # Every call pays for this: the context is resolved once, not per name
    # (a proxied name costs microseconds).
    writer: CallLogWriter | None = app_ctx._get_current_object().app.extensions.get(EXTENSION)
    if writer is not None:
        writer.call_started()
        facts.logged = _Logged(writer)


def call_ended(facts: CallFacts, conn: sqlite3.Connection | None = None) -> None:
    """The call has its answer (``facts.answer``): inside its write
    transaction (``conn``), or as its request is torn down. Whatever
    happens here, the answer stays as it is."""
    logged = facts.logged
    if logged is None or logged.ended:
        return
    if conn is not None:
        _write_in_call(facts, logged, conn)
        return
    logged.ended = True
    answer = facts.answer
    if logged.written or not isinstance(answer, Response):   # written, or unanswered
        logged.writer.call_ended_unbuffered()
        return
    made = poll = None
    try:
        if facts.bot_id is not None:
            status = answer.status_code
            made, poll = _make(facts, status,
                               answer.get_data() if status == 200 else b"",
                               lambda: failure_of(answer) or {},
                               answer.headers.get(REPLAY_HEADER) == "true")
    except Exception:   # noqa: BLE001 - a record is never worth a failed call
        logger.exception("call log: no record made of this call")
        made = poll = None
    logged.writer.call_answered(made, poll)
    if made is not None or poll is not None:
        # Before the answer goes out: a caller's next call then finds this
        # one's record written, whichever worker serves it.
        logged.writer.write_soon()


def _write_in_call(facts: CallFacts, logged: _Logged, conn: sqlite3.Connection) -> None:
    """The record, with the call's rows, when this is the process's lone call.
    Should this fail, or the call's transaction roll back, the record is
    made at the call's end from the answer as any other."""
    if facts.bot_id is None or not logged.writer.may_write_in_call():
        return
    status, body, headers = facts.answer
    try:
        made, poll = _make(facts, status, body.encode(),
                           lambda: failure_in(body) or {}, headers.get(REPLAY_HEADER) == "true")
        polls = {poll[0]: (1 if poll[2] else 0, poll[1])} if poll is not None else {}
        records = [made] if made is not None else []
        # No savepoint of its own (one cost 1.2% of a sendMessage): each
        # statement is undone alone if it fails, and a record whose trim
        # failed after its insert is still a record.
        call_records.write(conn, records, polls, logged.writer.trims_due(records))
    except (ApiError, sqlite3.Error):
        return
    except Exception:   # noqa: BLE001 - a record is never worth a failed call
        logger.exception("call log: no record made of this call")
        return
    logged.written = True
    conn.on_rollback(lambda: setattr(logged, "written", False))


def _make(facts: CallFacts, status: int, data: bytes, failure, replayed: bool):
    context_g = g._get_current_object()
    return record.make(facts, record.Outcome(
        status, data, failure, replayed, logs.elapsed_seconds(context_g) * 1000,
        logs.request_id(context_g)))


def writer() -> CallLogWriter | None:
    """This app's writer (None when BOTSVC_CALL_LOG=0)."""
    return current_app.extensions.get(EXTENSION)
