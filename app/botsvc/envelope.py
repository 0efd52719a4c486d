"""The contract's response envelope, for successes and failures alike."""
from __future__ import annotations

import json
import logging

import werkzeug.exceptions
from flask import Response, current_app, request
from werkzeug.exceptions import HTTPException

from botsvc import disk
from botsvc.errors import ApiError, ErrorCode, MethodNotAllowed
from botsvc.jsontext import dumps

log = logging.getLogger(__name__)
REPLAY_HEADER = "Idempotent-Replayed"


def ok_body(result) -> str:
    return dumps({"ok": True, "result": result})


def json_response(status: int, body: str, headers: dict | None = None) -> Response:
    return Response(body, status=status, mimetype="application/json", headers=headers)


def error_response(error: ApiError) -> Response:
    response = json_response(error.http_status, dumps(error.body()), error.headers())
    response.botsvc_error_code = error.code.value   # known: error_code_of need not parse
    return response


def error_code_of(response: Response) -> str | None:
    """The error_code of a failure answered in the envelope (None for a
    success or anything else)."""
    failure = failure_of(response)
    if failure is None:
        return None
    code = failure.get("error_code")
    return code if isinstance(code, str) and code in ErrorCode.__members__ else None


def failure_of(response: Response) -> dict | None:
    """The envelope of a failure (None for a success or anything else), read
    once and kept on the response: metrics, the log line and the call log
    all ask."""
    if response.status_code < 400 or response.is_streamed or response.mimetype != JSON:
        return None
    failure = getattr(response, "botsvc_failure", _UNREAD)
    if failure is _UNREAD:
        failure = response.botsvc_failure = failure_in(response.get_data())
    return failure


def failure_in(body: str | bytes) -> dict | None:
    """The envelope a failure's JSON body holds (None if it holds none)."""
    try:
        failure = json.loads(body)
    except ValueError:
        return None
    return failure if isinstance(failure, dict) else None


_UNREAD = object()
JSON = "application/json"
_HTTP_EXCEPTION_CODES = {
    404: (ErrorCode.METHOD_NOT_FOUND, "Not found"),
    413: (ErrorCode.REQUEST_TOO_LARGE, "Request body is too large"),
}


def http_exception_response(exc: HTTPException) -> Response:
    if isinstance(exc, werkzeug.exceptions.MethodNotAllowed):
        return error_response(MethodNotAllowed(tuple(exc.valid_methods or ()),
                                               "This route does not answer that HTTP method"))
    code, description = _HTTP_EXCEPTION_CODES.get(
        exc.code, (ErrorCode.INVALID_PARAMETER if (exc.code or 500) < 500
                   else ErrorCode.INTERNAL_ERROR, exc.name))
    error = ApiError(code, description)
    return json_response(exc.code or 500, dumps(error.body()))


def internal_error_response(exc: Exception) -> Response:
    if disk.is_disk_full(exc, current_app.config["SETTINGS"].data_dir):
        # A write the disk could not take, wherever it was (the upload's
        # quarantine copy, a stored file, the database): as the contract says.
        log.warning("the disk is full: %s refused with STORAGE_FULL", request.path)
        return error_response(disk.storage_full())
    # The traceback goes to the server log only; the client learns nothing of it.
    log.exception("unhandled error", exc_info=exc)
    error = ApiError(ErrorCode.INTERNAL_ERROR, "Internal server error; retry with backoff")
    return json_response(500, dumps(error.body()))
