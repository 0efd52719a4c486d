"""The /v2 request pipeline, in the order the contract fixes:
platform, token, bot disabled, idempotency replay, rate limits, validation,
execution. Validation is *computed* before the write transaction (it needs no
lock) but *applied* in its place in that order, so an invalid request still
consumes its rate and is stored under its Idempotency-Key.
"""
from __future__ import annotations

import contextlib
import sqlite3

from flask import Blueprint, Response, current_app, g, request

from botsvc import disk, limits, logs, metrics
from botsvc import idempotency as idem
from botsvc.api.registry import METHODS, Call
from botsvc.api.run import Run
from botsvc.auth import (
    bearer_token,
    bot_disabled,
    identify_bot,
    identify_bot_by_id,
    platform_disabled,
    unauthorized,
)
from botsvc.call_log.capture import CallFacts, call_ended, call_started
from botsvc.catalogue.body import is_form_request, parse_body
from botsvc.catalogue.entry import Method, validate_request
from botsvc.db import get_db
from botsvc.domain import faults
from botsvc.domain.bots import find_bot
from botsvc.envelope import error_code_of
from botsvc.errors import CONNECTION_ERRORS, ApiError, ErrorCode, MethodNotAllowed

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
    facts = g.call_facts = CallFacts(name, key)   # the call log's (call_started, call_ended)
    call_started(facts)
    method = METHODS.get(name)
    if method is None or req.method != "POST":
        _note_caller(facts)
        if method is None:
            raise ApiError(ErrorCode.METHOD_NOT_FOUND, f"Method {name} not found")
        raise MethodNotAllowed(("POST",), "Methods are called with POST")
    settings = current_app.config["SETTINGS"]
    conn = get_db()
    bot = _checked_bot(conn, environ, name, facts)
    if method.file_fields and is_form_request(req):
        # Before a byte of the body lands in the quarantine.
        disk.check_room_for_upload(settings.data_dir, settings.min_free_bytes)
    body = parse_body(req, settings.upload_max_bytes)
    facts.entry, facts.body = method, body
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
              _limits_in_force(settings, method, body), facts)
    try:
        return run.claimed() if method.prepare else run.single()
    except sqlite3.IntegrityError:
        if find_bot(conn, bot.id) is not None:
            raise
        # ``reset`` removed the bot while its call ran: its token is no more.
        raise unauthorized() from None


def _checked_bot(conn: sqlite3.Connection, environ: dict, name: str, facts: CallFacts):
    """The token's bot, through the steps the contract puts before the body:
    platform, token, an injected fault, bot disabled."""
    token = bearer_token(environ.get("HTTP_AUTHORIZATION"))
    resent = environ.get(RESENT_AS_BOT)
    bot, platform_is_disabled = (identify_bot(conn, token) if resent is None
                                 else identify_bot_by_id(conn, resent[0]))
    if bot is not None:
        g.bot_id = facts.bot_id = bot.id   # the log line's, the call log's
        facts.token, facts.resent_from = token, resent and resent[1]
    if platform_is_disabled:
        raise platform_disabled()
    if bot is None:
        raise unauthorized()
    if bot.has_faults:   # the contract: right after the token
        # Taking a fault writes, and a parked request runs again from its first
        # byte (app/botsvc/connection/body.py): it parks here, before the write.
        environ["wsgi.input"].read(0)
        fault = facts.fault = faults.take(conn, bot.id, name)
        if fault is not None:
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


def _note_caller(facts: CallFacts) -> None:
    """Whose call this is, for the call log, when it is answered before the
    token is checked (an unknown method, an HTTP method other than POST):
    the answer stays what it is, whatever the token."""
    token = bearer_token(request.headers.get("Authorization"))
    with contextlib.suppress(sqlite3.Error):
        bot, _ = identify_bot(get_db(), token)
        if bot is not None:
            g.bot_id = facts.bot_id = bot.id
            facts.token = token


@bp.after_request
def count_call(response: Response) -> Response:
    """Every answer of /v2/<name>, success or failure, counted once; a name
    outside the catalogue is ``unknown`` (clients cannot mint label values).
    The answer joins what the call log is handed (``end_call``)."""
    name = (request.view_args or {}).get("name")
    code = error_code_of(response) or ("ok" if response.status_code < 400 else "unknown")
    metrics.api_request(name if name in METHODS else "unknown", code, logs.elapsed_seconds())
    facts: CallFacts | None = g.get("call_facts")
    if facts is not None:
        facts.answer = response
    return response


@bp.teardown_request
def end_call(_error) -> None:
    """The call log is handed the call's end, with its answer: before the
    answer is sent (Flask tears a request down before the server writes a
    byte). A call parked until its body has arrived (app/botsvc/connection/body.py)
    unwinds here with no answer (no after-request hook ran): it ends with
    none, and runs again whole."""
    facts: CallFacts | None = g.pop("call_facts", None)
    if facts is not None:
        call_ended(facts)
