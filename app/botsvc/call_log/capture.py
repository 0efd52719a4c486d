"""The seam between the /v2 dispatcher and the call log (docs/call-log.md).

Every call made with a valid token (a disabled bot's, a disabled platform's,
an unknown method's under its requested name) is recorded once its answer is
known, from what answering it already produced. The dispatcher holds one
``CallCapture`` for the call (``call_started``; a ``NO_CAPTURE`` that keeps
nothing when the log is off) and tells it what it learns on the way: the
token's bot (``caller``), the method's entry and the parsed body (``read``),
a fault injected into the call (``injected``). The answer is handed over once:
inside the call's own write transaction when it has one (``answered_in``),
else when the response is made (``answered``, an after-request hook of the
app). The record itself is made by botsvc.call_log.record; a getUpdates that
succeeds with no update is counted, not recorded. A lone call that runs its
method in a write transaction writes its record there; any other record is
handed to the process's CallLogWriter, which writes it before the answer is
sent when it can do so at once: how is the writer's business.
"""
from __future__ import annotations

import logging
import sqlite3

from flask import Response, current_app, g
from flask.globals import app_ctx

from botsvc import clock, logs
from botsvc.call_log import record
from botsvc.call_log.writer import EXTENSION, CallLogWriter
from botsvc.catalogue.body import RequestBody
from botsvc.contract import KEY
from botsvc.db import transaction
from botsvc.domain import call_log
from botsvc.envelope import REPLAY_HEADER, failure_in, failure_of
from botsvc.errors import ApiError

logger = logging.getLogger(__name__)
REDACTED = record.REDACTED


class CallCapture:
    """What the dispatcher learns of a call on the way, for its record."""
    __slots__ = ("writer", "method", "arrived_at", "bot_id", "secret", "key", "body",
                 "secret_fields", "injected", "resent_from", "written")

    def __init__(self, writer: CallLogWriter, method: str, key: str | None):
        self.writer, self.method = writer, method
        self.arrived_at = clock.machine_time()
        self.bot_id: int | None = None
        self.secret = b""               # the token's secret part, to keep it out
        # The Idempotency-Key when it is one (an invalid one is refused unused).
        self.key = key if key is not None and KEY.match(key) else None
        self.body: RequestBody | None = None
        self.secret_fields: tuple[str, ...] = ()   # the method's, from the catalogue
        self.injected: dict | None = None          # {error_code?, delay_ms?}
        self.resent_from: int | None = None        # resendCall's: the call sent again
        # The record went with the call's own transaction (answered_in).
        self.written = False

    def caller(self, bot_id: int, token: str | None, resent_from: int | None = None) -> None:
        """The token's bot: the call is recorded in its log. ``resent_from``:
        the call is the testing tools' re-send of that call of the log
        (resendCall), and its record says so, as a replayed update is marked."""
        self.bot_id, self.secret = bot_id, (token or "").partition(":")[2].encode()
        self.resent_from = resent_from

    def read(self, secret_fields: tuple[str, ...], body: RequestBody) -> None:
        """The body as parsed, and which of its fields are credentials."""
        self.secret_fields, self.body = secret_fields, body

    def fault(self, error_code: str | None, delay_ms: int) -> None:
        """A fault of the testing tools applied to this call."""
        injected: dict = {}
        if error_code is not None:
            injected["error_code"] = error_code
        if delay_ms:
            injected["delay_ms"] = delay_ms
        self.injected = injected or None

    def answered_in(self, conn: sqlite3.Connection, status: int, body: str,
                    headers: dict) -> None:
        """Inside the call's own write transaction, its answer made: while this
        process answers its calls one at a time, the record is written here,
        with the call's rows, rather than by a transaction of its own before
        the answer is sent (write_soon), which cost a COMMIT, some 0.2 ms of
        CPU, per call. Should this fail, or the call's transaction roll back
        (a full disk at its COMMIT), the record is made from the answer as
        any other."""
        if self.bot_id is None or not self.writer.may_write_in_call():
            return
        try:
            made, poll = record.make(self, _outcome(status, body.encode(),
                                                    lambda: failure_in(body) or {},
                                                    headers.get(REPLAY_HEADER) == "true"))
            polls = {poll[0]: (1 if poll[2] else 0, poll[1])} if poll is not None else {}
            with transaction(conn):   # a savepoint: a record that fails undoes only itself
                call_log.write(conn, [made] if made is not None else [], polls)
        except (ApiError, sqlite3.Error):
            return
        except Exception:   # noqa: BLE001 - a record is never worth a failed call
            logger.exception("call log: no record made of this call")
            return
        self.written = True
        conn.on_rollback(lambda: setattr(self, "written", False))


class _NoCapture:
    """The call log is off: the dispatcher's calls keep nothing."""
    __slots__ = ()

    def caller(self, bot_id, token, resent_from=None) -> None:
        pass

    def read(self, secret_fields, body) -> None:
        pass

    def fault(self, error_code, delay_ms) -> None:
        pass

    def answered_in(self, conn, status, body, headers) -> None:
        pass


NO_CAPTURE = _NoCapture()


def call_started(method: str, key: str | None) -> CallCapture | _NoCapture:
    """A /v2 call begins (the dispatcher's first step, with the call's
    Idempotency-Key header)."""
    # Every call pays for this: the context is resolved once, not per name
    # (a proxied name costs microseconds).
    context = app_ctx._get_current_object()
    writer: CallLogWriter | None = context.app.extensions.get(EXTENSION)
    if writer is None:
        return NO_CAPTURE
    writer.call_started()
    capture = context.g.call_capture = CallCapture(writer, method, key)
    return capture


def writer() -> CallLogWriter | None:
    """This app's writer (None when BOTSVC_CALL_LOG=0)."""
    return current_app.extensions.get(EXTENSION)


def answered(response: Response) -> Response:
    """The app's after-request hook: hand this call's record, if the call is
    a known bot's /v2 call, to the writer. Whatever happens here, the answer
    stays as it is."""
    context_g = g._get_current_object()
    capture: CallCapture | None = context_g.pop("call_capture", None)
    if capture is None:
        return response
    if capture.written:   # with the call's own rows (answered_in)
        capture.writer.call_ended_unbuffered()
        return response
    made = poll = None
    try:
        if capture.bot_id is not None:
            status = response.status_code
            made, poll = record.make(capture, _outcome(
                status, response.get_data() if status == 200 else b"",
                lambda: failure_of(response) or {},
                response.headers.get(REPLAY_HEADER) == "true", context_g))
    except Exception:   # noqa: BLE001 - a record is never worth a failed call
        logger.exception("call log: no record made of this call")
        made = poll = None
    capture.writer.call_answered(made, poll)
    if made is not None or poll is not None:
        # Before the answer goes out: a caller's next call then finds this
        # one's record written, whichever worker serves it.
        capture.writer.write_soon()
    return response


def unanswered() -> None:
    """The app's teardown: a capture ``answered`` did not take is a call that
    unwound with no answer (parked, to run again whole); it is no longer in
    flight, and leaves no record (its second run makes the one record)."""
    capture: CallCapture | None = g._get_current_object().pop("call_capture", None)
    if capture is not None:
        capture.writer.call_ended_unbuffered()


def _outcome(status: int, data: bytes, failure, replayed: bool, context_g=None
             ) -> record.Outcome:
    context_g = g._get_current_object() if context_g is None else context_g
    return record.Outcome(status, data, failure, replayed,
                          logs.elapsed_seconds(context_g) * 1000, logs.request_id(context_g))
