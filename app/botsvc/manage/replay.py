"""Replay, among the testing tools (BOTSVC_TEST_TOOLS=1 only; docs/testing-tools.md):

- ``redeliverUpdate``: a kept update queued again for the bot as a new
  update (botsvc.domain.replays), delivered as the bot gets its updates.
- ``resendCall``: a call of the bot's call log sent again as the bot would
  send it, through the /v2 dispatcher (token step aside: the bot's id in the
  request's environ stands for its token, which the service does not keep),
  so it meets the same checks, faults, rate limits, handler and call log as
  the bot's own call. It goes as the bot sent it: JSON, or a form when its
  values were a form's text (the record keeps them as text); with no
  Idempotency-Key (with one, the answer would only be replayed). With
  ``params`` (Edit and resend), those parameters go instead of the kept
  ones, as JSON, once the method's own schema takes them.
"""
from __future__ import annotations

import hmac
import json
import re

from flask import current_app, has_request_context, request
from marshmallow import fields
from werkzeug.test import Client

from botsvc import clock
from botsvc.api.dispatch import RESENT_AS_BOT
from botsvc.api.registry import METHODS
from botsvc.auth import hash_token
from botsvc.call_log.capture import REDACTED, writer
from botsvc.catalogue import results
from botsvc.catalogue.body import RequestBody
from botsvc.catalogue.entry import validate_request
from botsvc.catalogue.validation import Int
from botsvc.domain import call_log, replays
from botsvc.domain.bots import find_bot, require_bot
from botsvc.envelope import failure_in
from botsvc.errors import ApiError, ErrorCode, Reason, invalid
from botsvc.jsontext import dumps
from botsvc.manage.dispatch import operator_method
from botsvc.manage.methods import BotIdSchema

# How the call log keeps the bot's token where the bot put it in a value
# (botsvc.call_log.capture): what was sent there is not known.
TOKEN_MARK = REDACTED
# How long the new call's record may wait for the write lock before its
# token is replaced in it.
WRITE_PATIENCE_SECONDS = 2.0


class RedeliverUpdateSchema(BotIdSchema):
    update_id = Int(min=1, required=True)


class ResendCallSchema(BotIdSchema):
    call_id = Int(min=1, required=True)
    # Edit and resend: the parameters to send instead of the kept ones, whole
    # (not merged), judged by the method's own schema before anything is sent.
    params = fields.Dict(error_messages={"invalid": "must be an object"}, metadata={
        "description": "the parameters to send instead of the kept ones (Edit and resend): "
                       "the whole object, as JSON, judged by the call's method's own schema"})


@operator_method("redeliverUpdate", RedeliverUpdateSchema(), result=results.UpdateReplay,
                 summary="Deliver a kept update to the bot again, as a new update marked as a "
                         "replay (BOTSVC_TEST_TOOLS=1)", test_tool=True)
def redeliver_update(conn, p):
    return replays.redeliver(conn, p["bot_id"], p["update_id"])


@operator_method("resendCall", ResendCallSchema(), result=results.ResentCall,
                 summary="Send a call of the bot's call log again, as the bot would "
                         "(BOTSVC_TEST_TOOLS=1)", test_tool=True)
def resend_call(conn, p):
    bot_id, call_id = p["bot_id"], p["call_id"]
    require_bot(conn, bot_id)
    record = call_log.kept_call(conn, bot_id, call_id, clock.time())
    if record is None:
        raise invalid("call_id", f"Call {call_id} is not in the call log of bot {bot_id}")
    method = METHODS.get(record["method"])
    if method is None:
        raise invalid("call_id", f"Call {call_id} named no method ({record['method']}):"
                                 " there is nothing to send again", reason=Reason.UNKNOWN_METHOD)
    if "params" in p:
        params, as_form = _edited_params(record, method, p["params"]), False
    else:
        params = _replayable_params(record, method)
        as_form = _as_form(method, params, record)
    answer, body = _send(bot_id, call_id, record["method"], params, as_form)
    secret = _token_secret_in(conn, bot_id, body)
    if secret is not None:
        _keep_token_out(conn, bot_id, answer, secret)
    return answer


def _replayable_params(record: dict, method) -> dict:
    """The call's parameters, whole, or the refusal that says why not."""
    call_id = record["call_id"]
    params = record.get("params")
    if params is None or record.get("truncated"):
        raise invalid("call_id", f"Call {call_id} cannot be sent again: its parameters were not"
                                 " kept whole (its body was not read, or was over the call"
                                 " log's bound)", reason=Reason.PARAMS_NOT_KEPT)
    uploads = sorted(name for name, value in params.items()
                     if name in method.file_fields and _is_file_part(value))
    if uploads:
        raise invalid("call_id", f"Call {call_id} uploaded a file ({uploads[0]}): the call log"
                                 " keeps no file bytes, so it cannot be sent again",
                      reason=Reason.FILE_UPLOAD)
    if _holds_token_mark(params):
        raise invalid("call_id", f"Call {call_id} cannot be sent again: a value held the"
                                 " bot's token, which the call log does not keep",
                      reason=Reason.PARAMS_NOT_KEPT)
    return params


def _edited_params(record: dict, method, params: dict) -> dict:
    """Edit and resend: the parameters given in place of the kept ones, once
    the method's own schema takes them as JSON (what the /v2 door would
    refuse is refused here, naming the field under ``params``, and nothing is
    sent). A value still holding the token's mark is refused: the service
    does not know the token to put back."""
    try:
        validate_request(method, RequestBody(params))
    except ApiError as refused:
        inner = refused.parameters.get("path") or refused.parameters.get("field") or ""
        raise invalid("params", f"The edited parameters are not a valid {record['method']}:"
                                f" {refused.description}",
                      path=f"params.{inner}" if inner else "params") from None
    if _holds_token_mark(params):
        raise invalid("params", f"A value holds {TOKEN_MARK}, the mark of the bot's token,"
                                " which the service does not keep: write the value itself",
                      path="params")
    return params


def _is_file_part(value) -> bool:
    return isinstance(value, dict) and set(value) == {"file_name", "size"}


def _holds_token_mark(value) -> bool:
    """Whether a text anywhere in ``value`` holds the mark. A walk with a
    list rather than recursion: kept JSON may nest deeper than Python's
    stack allows."""
    waiting = [value]
    while waiting:
        item = waiting.pop()
        if isinstance(item, str) and TOKEN_MARK in item:
            return True
        if isinstance(item, dict):
            waiting.extend(item.values())
        elif isinstance(item, list):
            waiting.extend(item)
    return False


def _as_form(method, params: dict, record: dict) -> bool:
    """Whether the call went as a form: its values all text, which the
    method's schema takes only as a form's (reply_markup as JSON text, a
    number as digits), and it was not refused as invalid (such a refusal
    is what the same text sent as JSON gets). What validates as JSON goes
    as JSON."""
    if not params or not all(isinstance(v, str) for v in params.values()):
        return False
    if record.get("error_code") == ErrorCode.INVALID_PARAMETER.value:
        return False
    try:
        validate_request(method, RequestBody(params))
        return False
    except ApiError:
        pass
    try:
        validate_request(method, RequestBody(params, is_form=True))
        return True
    except ApiError:
        return False   # refused either way: sent as the JSON it was kept as


def _token_secret_in(conn, bot_id: int, body: bytes) -> str | None:
    """The secret part of the bot's token where the answer holds the token
    (the bot stored it somewhere, and the call read it back): the call went
    without it, so its record could not leave it out. Candidates are checked
    against the stored hash."""
    stored = find_bot(conn, bot_id)
    for candidate in re.findall(rb"(?<![0-9])%d:([A-Za-z0-9_-]{43})" % bot_id, body):
        secret = candidate.decode()
        if stored is not None and hmac.compare_digest(
                hash_token(f"{bot_id}:{secret}"), stored["token_hash"]):
            return secret
    return None


def _keep_token_out(conn, bot_id: int, answer: dict, secret: str) -> None:
    """The token replaced in the new call's record (written now if it waits
    in this process's writer) and in the answer."""
    log = writer()
    if log is not None:
        log.write_if_free(WRITE_PATIENCE_SECONDS)
    call_log.redact(conn, bot_id, answer["request_id"], secret, TOKEN_MARK)
    for name in ("result", "description", "parameters"):
        if name in answer:
            answer[name] = json.loads(dumps(answer[name]).replace(secret, TOKEN_MARK))


def _send(bot_id: int, call_id: int, method: str, params: dict,
          as_form: bool) -> tuple[dict, bytes]:
    """POST /v2/<method> as bot ``bot_id``, in this process, in an app
    context of its own (its request must not share this one's ``g``)."""
    app = current_app._get_current_object()
    base = request.host_url if has_request_context() else "http://localhost/"
    overrides = {RESENT_AS_BOT: (bot_id, call_id)}
    with app.app_context():
        client = Client(app)
        response = (client.post(f"/v2/{method}", base_url=base, data=params,
                                environ_overrides=overrides) if as_form
                    else client.post(f"/v2/{method}", base_url=base, json=params,
                                     environ_overrides=overrides))
    body = response.get_data()
    answer = {"method": method, "sent_as": "form" if as_form else "json",
              "http_status": response.status_code, "ok": response.status_code == 200,
              "request_id": response.headers.get("X-Request-Id", "")}
    if answer["ok"]:
        answer["result"] = response.get_json()["result"]
    else:
        failure = failure_in(response.get_data()) or {}
        answer["error_code"] = failure.get("error_code", ErrorCode.INTERNAL_ERROR.value)
        answer["description"] = failure.get("description", "")
        answer["parameters"] = failure.get("parameters", {})
    return answer, body
