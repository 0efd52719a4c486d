"""What each /v2 call leaves in its bot's call log (docs/call-log.md).

Every call made with a valid token (a disabled bot's, a disabled platform's,
an unknown method's under its requested name) is recorded once its answer is
known, from what answering it already produced: the dispatcher hands over
what it read (``CallCapture``: the token's bot, the Idempotency-Key, the
parsed body), and the answer gives the rest (a success's ``result`` is a
slice of its bytes, never encoded again; a failure's error_code and
description). A getUpdates that succeeds with no update is counted, not
recorded. A lone call that runs its method in a write transaction writes
its record there (``record_in_call``); any other record is handed to the
process's CallLogWriter, which writes it before the answer is sent when it
can do so at once: how is the writer's business. Every call pays for this,
so it reads each value once.

A record never holds a token, a header but the Idempotency-Key, or file
bytes: a file part is ``{file_name, size}``, and the bot's own token, where
the bot put it in a value, is replaced.
"""
from __future__ import annotations

import logging
import sqlite3

from flask import Response, current_app, g
from flask.globals import app_ctx

from botsvc import clock, logs
from botsvc.call_log_writer import EXTENSION, CallLogWriter
from botsvc.catalogue.body import RequestBody
from botsvc.contract import KEY
from botsvc.db import transaction
from botsvc.domain import call_log
from botsvc.domain.call_log import BODY_MAX_BYTES, CallRecord, within_bound
from botsvc.envelope import REPLAY_HEADER, failure_in, failure_of
from botsvc.errors import ApiError
from botsvc.jsontext import dumps

logger = logging.getLogger(__name__)
_SUCCESS_PREFIX = b'{"ok":true,"result":'
_EMPTY_POLL = _SUCCESS_PREFIX + b"[]}"
REDACTED = "[token]"
# A JSON body this short is kept as it was sent: its compact form could not
# reach the bound (only a number written with an exponent grows when written
# again, 1e15 to 1000000000000000.0: under 5 times).
_RAW_KEPT_MAX_BYTES = BODY_MAX_BYTES // 5


class CallCapture:
    """What the dispatcher learns of a call on the way, for its record."""
    __slots__ = ("writer", "method", "arrived_at", "bot_id", "secret", "key", "body",
                 "written")

    def __init__(self, writer: CallLogWriter, method: str, key: str | None):
        self.writer, self.method = writer, method
        self.arrived_at = clock.machine_time()
        self.bot_id: int | None = None
        self.secret = b""               # the token's secret part, to keep it out
        # The Idempotency-Key when it is one (an invalid one is refused unused).
        self.key = key if key is not None and KEY.match(key) else None
        self.body: RequestBody | None = None
        # The record went with the call's own transaction (record_in_call).
        self.written = False


def call_started(method: str, key: str | None) -> CallCapture | None:
    """A /v2 call begins (the dispatcher's first step, with the call's
    Idempotency-Key header); None when the call log is off."""
    # Every call pays for this: the context is resolved once, not per name
    # (a proxied name costs microseconds).
    context = app_ctx._get_current_object()
    writer: CallLogWriter | None = context.app.extensions.get(EXTENSION)
    if writer is None:
        return None
    writer.call_started()
    capture = context.g.call_capture = CallCapture(writer, method, key)
    return capture


def writer() -> CallLogWriter | None:
    """This app's writer (None when BOTSVC_CALL_LOG=0)."""
    return current_app.extensions.get(EXTENSION)


def record_call(response: Response) -> None:
    """Hand this call's record, if the call is a known bot's, to the writer.
    Whatever happens here, the answer stays as it is."""
    context_g = g._get_current_object()
    capture: CallCapture | None = context_g.pop("call_capture", None)
    if capture is None:
        return
    if capture.written:   # with the call's own rows (record_in_call)
        capture.writer.call_answered_in_call()
        return
    try:
        record, poll = _record_of(capture, response, context_g) \
            if capture.bot_id is not None else (None, None)
    except Exception:   # noqa: BLE001 - a record is never worth a failed call
        logger.exception("call log: no record made of this call")
        record = poll = None
    capture.writer.call_answered(record, poll)
    if record is not None or poll is not None:
        # Before the answer goes out: a caller's next call then finds this
        # one's record written, whichever worker serves it.
        capture.writer.write_soon()


def record_in_call(conn: sqlite3.Connection, status: int, body: str, headers: dict) -> None:
    """Inside the call's own write transaction, its answer made: while this
    process answers its calls one at a time, the record is written here, with
    the call's rows, rather than by a transaction of its own before the
    answer is sent (write_soon), which cost a COMMIT, some 0.2 ms of CPU, per
    call. Should this fail, or the call's transaction roll back (a full disk
    at its COMMIT), the record is made from the answer as any other."""
    capture: CallCapture | None = g.get("call_capture")
    if capture is None or capture.bot_id is None or not capture.writer.may_write_in_call():
        return
    try:
        record, poll = _record_from(capture, status, body.encode(),
                                    lambda: failure_in(body) or {},
                                    headers.get(REPLAY_HEADER) == "true", g._get_current_object())
        polls = {poll[0]: (1 if poll[2] else 0, poll[1])} if poll is not None else {}
        with transaction(conn):   # a savepoint: a record that fails undoes only itself
            call_log.write(conn, [record] if record is not None else [], polls)
    except (ApiError, sqlite3.Error):
        return
    except Exception:   # noqa: BLE001 - a record is never worth a failed call
        logger.exception("call log: no record made of this call")
        return
    capture.written = True
    conn.on_rollback(lambda: setattr(capture, "written", False))


def _record_of(capture: CallCapture, response: Response, context_g
               ) -> tuple[CallRecord | None, tuple[int, int, bool] | None]:
    """The call's record (None for an empty poll), and for a getUpdates
    ``(bot_id, date, empty)``."""
    status = response.status_code
    return _record_from(capture, status, response.get_data() if status == 200 else b"",
                        lambda: failure_of(response) or {},
                        response.headers.get(REPLAY_HEADER) == "true", context_g)


def _record_from(capture: CallCapture, status: int, data: bytes, failure_of_answer,
                 replayed: bool, context_g
                 ) -> tuple[CallRecord | None, tuple[int, int, bool] | None]:
    """The record of an answer: its status, its bytes (a success's), its
    envelope (``failure_of_answer()``, read only for a failure) and whether
    it was a replay."""
    bot_id, method = capture.bot_id, capture.method
    # The machine's time at arrival, with the service clock's offset as the
    # token query refreshed it.
    date = int(capture.arrived_at + clock.offset())
    if status != 200:
        data = b""
    poll = None
    if method == "getUpdates":
        poll = (bot_id, date, data == _EMPTY_POLL)
        if poll[2]:
            return None, poll
    params, params_over = _params(capture.body, capture.secret)
    result, result_over = _result(data, capture.secret)
    failure = failure_of_answer() if status != 200 else {}
    return CallRecord(
        bot_id, date, method, status, logs.elapsed_seconds(context_g) * 1000,
        logs.request_id(context_g), _text(failure.get("error_code")),
        _redacted_text(failure.get("description"), capture.secret), capture.key,
        capture.key is not None and replayed,
        params, result, params_over or result_over), poll


def _params(body: RequestBody | None, secret: bytes) -> tuple[bytes | None, bool]:
    """The parameters as sent, and whether they were over the bound. None
    (not over) when the body was not read: refused before it, too large, or
    not JSON."""
    if body is None or body.raw_sha256 is not None:
        return None, False
    raw = body.raw
    if raw is not None and len(raw) <= _RAW_KEPT_MAX_BYTES and b"\\u" not in raw:
        return _redacted(raw, secret), False   # (\u escapes could spell the token)
    params = body.params
    if body.files:
        params = {**params, **{name: {"file_name": part.file_name, "size": part.size}
                               for name, part in body.files.items()}}
    kept = within_bound(dumps(params).encode())
    return _redacted(kept, secret), kept is None


def _result(data: bytes, secret: bytes) -> tuple[bytes | None, bool]:
    """A success's ``result``: the answer without its envelope."""
    if not data.startswith(_SUCCESS_PREFIX):
        return None, False
    kept = within_bound(data[len(_SUCCESS_PREFIX):-1])
    return _redacted(kept, secret), kept is None


def _redacted(json_text: bytes | None, secret: bytes) -> bytes | None:
    """The bot's own token, where the bot put it in a value (a webhook URL
    holding it, say), replaced: no record holds a token. Its characters
    need no escaping in JSON, so the text stays valid."""
    if json_text is None or not secret or secret not in json_text:
        return json_text
    return json_text.replace(secret, REDACTED.encode())


def _redacted_text(value, secret: bytes) -> str | None:
    if not isinstance(value, str):
        return None
    text = secret.decode()
    return value.replace(text, REDACTED) if text and text in value else value


def _text(value) -> str | None:
    return value if isinstance(value, str) else None
