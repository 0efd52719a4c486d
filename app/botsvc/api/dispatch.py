"""The /v2 request pipeline, in the order the contract fixes:
platform, token, bot disabled, idempotency replay, rate limits, validation,
execution. Validation is *computed* before the write transaction (it needs no
lock) but *applied* in its place in that order, so an invalid request still
consumes its rate and is stored under its Idempotency-Key.
"""
from __future__ import annotations

import contextlib
import sqlite3
import time

from flask import Blueprint, Response, current_app, g, request

from botsvc import disk, limits, logs, metrics
from botsvc import idempotency as idem
from botsvc.api.registry import METHODS, Call
from botsvc.auth import (
    bearer_token,
    bot_disabled,
    identify_bot,
    identify_bot_by_id,
    platform_disabled,
    unauthorized,
)
from botsvc.call_log import capture as call_capture
from botsvc.catalogue.body import is_form_request, parse_body
from botsvc.catalogue.entry import Method, validate_request
from botsvc.db import get_db, transaction
from botsvc.domain import faults
from botsvc.domain.bots import find_bot
from botsvc.envelope import REPLAY_HEADER, error_code_of, error_response, json_response, ok_body
from botsvc.errors import CONNECTION_ERRORS, ApiError, ErrorCode, MethodNotAllowed
from botsvc.jsontext import dumps

bp = Blueprint("api", __name__, url_prefix="/v2")
# The testing tools' resendCall (botsvc.manage.replay) sends a call as its bot
# through this pipeline: ``(bot id, call_id sent again)`` under this WSGI
# environ key stands for its token. No client can set it (headers are HTTP_*).
RESENT_AS_BOT = "botsvc.resent_as_bot"
ALL_HTTP_METHODS = ["GET", "HEAD", "POST", "PUT", "PATCH", "DELETE", "OPTIONS"]
# What any /v2 method can answer besides its own codes (its catalogue entry's
# ``errors``): the steps below, a bad body or Idempotency-Key, and the server.
PIPELINE_ERRORS = (ErrorCode.PLATFORM_DISABLED, ErrorCode.UNAUTHORIZED, ErrorCode.BOT_DISABLED,
                   ErrorCode.IDEMPOTENCY_CONFLICT, ErrorCode.RATE_LIMITED,
                   ErrorCode.REQUEST_TOO_LARGE, ErrorCode.INVALID_JSON,
                   ErrorCode.INVALID_PARAMETER, ErrorCode.STORAGE_FULL,
                   ErrorCode.INTERNAL_ERROR,
                   *CONNECTION_ERRORS)


@bp.route("/<name>", methods=ALL_HTTP_METHODS, provide_automatic_options=False)
def call_method(name: str) -> Response:
    # The request itself, not Flask's proxy of it: each use of the proxy
    # looks the request up again, and this function uses it a dozen times.
    req = request._get_current_object()
    environ = req.environ   # the headers as the server gave them: no copy
    key = environ.get(idem.ENVIRON_KEY)
    capture = call_capture.call_started(name, key)
    method = METHODS.get(name)
    if method is None or req.method != "POST":
        _note_caller(capture)
        if method is None:
            raise ApiError(ErrorCode.METHOD_NOT_FOUND, f"Method {name} not found")
        raise MethodNotAllowed(("POST",), "Methods are called with POST")
    settings = current_app.config["SETTINGS"]
    conn = get_db()
    bot = _checked_bot(conn, environ, name, capture)
    if method.file_fields and is_form_request(req):
        # Before a byte of the body lands in the quarantine.
        disk.check_room_for_upload(settings.data_dir, settings.min_free_bytes)
    body = parse_body(req, settings.upload_max_bytes)
    capture.read(method.secret_fields, body)
    call = Call(conn, settings, bot, name, files=body.files)
    if key is not None and not idem.KEY_PATTERN.match(key):
        # A validation error like any other: answered after the rate limits;
        # there is no usable key to store it under.
        key, validated = None, idem.invalid_key()
    else:
        try:
            validated = validate_request(method, body)
        except ApiError as error:
            validated = error
    run = Run(call, method, validated, key,
              idem.fingerprint(name, body.fingerprint_source()) if key else None,
              _limits_in_force(settings, method, body), capture)
    try:
        return run.claimed() if method.prepare else run.single()
    except sqlite3.IntegrityError:
        if find_bot(conn, bot.id) is not None:
            raise
        # ``reset`` removed the bot while its call ran: its token is no more.
        raise unauthorized() from None


def _checked_bot(conn: sqlite3.Connection, environ: dict, name: str, capture):
    """The token's bot, through the steps the contract puts before the body:
    platform, token, an injected fault, bot disabled."""
    token = bearer_token(environ.get("HTTP_AUTHORIZATION"))
    resent = environ.get(RESENT_AS_BOT)
    bot, platform_is_disabled = (identify_bot(conn, token) if resent is None
                                 else identify_bot_by_id(conn, resent[0]))
    if bot is not None:
        g.bot_id = bot.id   # the log line's
        capture.caller(bot.id, token, None if resent is None else resent[1])
    if platform_is_disabled:
        raise platform_disabled()
    if bot is None:
        raise unauthorized()
    if bot.has_faults:   # the contract: right after the token
        # Taking a fault writes, and a parked request runs again from its first
        # byte (app/botsvc/connection/body.py): it parks here, before the write.
        environ["wsgi.input"].read(0)
        fault = faults.take(conn, bot.id, name)
        if fault is not None:
            capture.fault(fault.error_code.value if fault.error_code else None,
                          fault.delay_ms)
            faults.apply(fault)
    if bot.disabled:
        raise bot_disabled()
    return bot


def _limits_in_force(settings, method: Method, body) -> list:
    """The rate limits the call takes: "api", the method's own buckets, and
    "upload" for a direct upload to a send method."""
    in_force = limits.configured_limits(settings)
    buckets = (limits.API, *method.buckets)
    if body.files and method.file_fields and limits.UPLOAD not in buckets:
        buckets += (limits.UPLOAD,)
    return [in_force[b] for b in buckets if b in in_force]


def _note_caller(capture) -> None:
    """Whose call this is, for the call log, when it is answered before the
    token is checked (an unknown method, an HTTP method other than POST):
    the answer stays what it is, whatever the token."""
    if capture is call_capture.NO_CAPTURE:
        return
    token = bearer_token(request.headers.get("Authorization"))
    with contextlib.suppress(sqlite3.Error):
        bot, _ = identify_bot(get_db(), token)
        if bot is not None:
            g.bot_id = bot.id
            capture.caller(bot.id, token)


@bp.after_request
def count_call(response: Response) -> Response:
    """Every answer of /v2/<name>, success or failure, counted once; a name
    outside the catalogue is ``unknown`` (clients cannot mint label values).
    The call goes in its bot's call log."""
    name = (request.view_args or {}).get("name")
    code = error_code_of(response) or ("ok" if response.status_code < 400 else "unknown")
    metrics.api_request(name if name in METHODS else "unknown", code, logs.elapsed_seconds())
    return call_capture.answered(response)


# A call parked until its body has arrived (app/botsvc/connection/body.py) unwinds
# with no answer and no after-request hook: the writer must not count it.
bp.teardown_request(lambda _error: call_capture.unanswered())


class Run:
    """One execution of a method under the idempotency and rate rules."""

    def __init__(self, call: Call, method: Method, validated, key, fp, in_force, capture):
        self.call, self.method, self.validated = call, method, validated
        self.capture = capture   # the call log's: handed the answer in the transaction
        self.key, self.fp, self.limits = key, fp, in_force
        self.conn = call.conn
        # Whether the handler changed any row (None: it has not run): a request
        # that wrote nothing may answer on a full disk (``single``).
        self.handler_wrote: bool | None = None

    def single(self) -> Response:
        """Check, consume, execute and store in one write transaction; the
        answer is made once the write lock is released (every other writer
        waits for that lock)."""
        try:
            return json_response(*self._checked(self._execute_and_store))
        except ApiError as error:
            if error.code != ErrorCode.STORAGE_FULL or self.key or self.handler_wrote:
                raise
        return self._read_on_full_disk()

    def _read_on_full_disk(self) -> Response:
        """The disk could not take the rate's record, and the request writes
        nothing else (no Idempotency-Key, a handler that changed no row): it is
        a read, and answers. Its rate is checked against the stored state and
        counted in this process (limits.consume_unrecorded). Should the handler
        write after all, that is refused as STORAGE_FULL."""
        with transaction(self.conn):
            limits.consume_unrecorded(self.conn, self.call.bot.id, self.limits)
            status, body, headers = self._execute_in_savepoint()
            if self.handler_wrote:
                raise disk.storage_full()
        return json_response(status, body, headers)

    def claimed(self) -> Response:
        """Claim the key, run the slow part outside any transaction, then store."""
        replay = self._checked(self._claim)
        if replay is not None:
            return json_response(*replay)
        try:
            if isinstance(self.validated, ApiError):
                raise self.validated
            self.call.params = self.validated
            self.call.prepared = self.method.prepare(self.call)
            with transaction(self.conn):
                body = ok_body(self.method.handler(self.call))
                self._store(200, body)
            return json_response(200, body)
        except ApiError as error:
            if error.code == ErrorCode.STORAGE_FULL:
                self._release_claim()
                raise
            try:
                with transaction(self.conn):
                    self._store(error.http_status, dumps(error.body()))
            except ApiError as failed:
                if failed.code != ErrorCode.STORAGE_FULL:
                    raise
                self._release_claim()   # the answer could not be kept: nothing is
                raise
            return error_response(error)
        except BaseException:
            self._release_claim()
            raise

    def _release_claim(self) -> None:
        """Free the key after a failure; on a full disk, as soon as the disk
        takes it (idempotency.release_later): a failed key is never stored."""
        if not self.key:
            return
        try:
            with transaction(self.conn):
                idem.release(self.conn, self.call.bot.id, self.key)
        except ApiError as error:
            if error.code != ErrorCode.STORAGE_FULL:
                raise
            idem.release_later(self.call.bot.id, self.key)

    def _checked(self, then):
        """In one write transaction: replay a stored result, or take the rate and
        run ``then``. While a duplicate with the same key runs, wait up to 5 s."""
        deadline = time.monotonic() + idem.WAIT_FOR_RUNNING_SECONDS
        while True:
            try:
                with transaction(self.conn):
                    answer = self._replay_or_none()
                    if answer is None:
                        limits.consume(self.conn, self.call.bot.id, self.limits)
                        answer = then()
                    if answer is not None:
                        self.capture.answered_in(self.conn, *answer)
                    return answer
            except idem.StillRunning:
                if time.monotonic() >= deadline:
                    raise idem.in_progress() from None
                time.sleep(0.05)

    def _claim(self) -> None:
        if self.key:
            idem.claim(self.conn, self.call.bot.id, self.key, self.call.method, self.fp)

    def _execute_and_store(self) -> tuple[int, str, dict]:
        status, body, headers = self._execute_in_savepoint()
        self._store(status, body)
        return status, body, headers

    def _replay_or_none(self) -> tuple[int, str, dict] | None:
        if not self.key:
            return None
        stored = idem.lookup(self.conn, self.call.bot.id, self.key, self.call.method, self.fp)
        if stored is None:
            return None
        return stored.http_status, stored.body, {REPLAY_HEADER: "true"}

    def _execute_in_savepoint(self) -> tuple[int, str, dict]:
        if isinstance(self.validated, ApiError):
            error = self.validated
        else:
            self.call.params = self.validated
            changes = self.conn.total_changes
            try:
                with transaction(self.conn):  # a savepoint: a failure undoes only the handler
                    result = self.method.handler(self.call)
                self.handler_wrote = self.conn.total_changes != changes
                return 200, ok_body(result), {}
            except ApiError as raised:
                error = raised
                if error.code == ErrorCode.STORAGE_FULL:
                    raise
        return error.http_status, dumps(error.body()), error.headers()

    def _store(self, status: int, body: str) -> None:
        if self.key:
            idem.store(self.conn, self.call.bot.id, self.key, self.call.method, self.fp,
                       status, body)
