"""The contract's error codes as data: one enum, one error class.

Every failure the service reports is an ``ApiError``; the dispatcher turns it
into the envelope ``{ok: false, error_code, description, parameters}``.
Modelled on Synapse's ``api/errors.py``.
"""
from __future__ import annotations

import math
from enum import StrEnum


class ErrorCode(StrEnum):
    INVALID_PARAMETER = "INVALID_PARAMETER"
    INVALID_JSON = "INVALID_JSON"
    UNAUTHORIZED = "UNAUTHORIZED"
    BOT_NOT_STARTED = "BOT_NOT_STARTED"
    BOT_BLOCKED = "BOT_BLOCKED"
    BOT_DISABLED = "BOT_DISABLED"
    CHAT_NOT_FOUND = "CHAT_NOT_FOUND"
    MESSAGE_NOT_FOUND = "MESSAGE_NOT_FOUND"
    BROADCAST_NOT_FOUND = "BROADCAST_NOT_FOUND"
    FILE_NOT_FOUND = "FILE_NOT_FOUND"
    METHOD_NOT_FOUND = "METHOD_NOT_FOUND"
    METHOD_NOT_ALLOWED = "METHOD_NOT_ALLOWED"
    WEBHOOK_ACTIVE = "WEBHOOK_ACTIVE"
    IDEMPOTENCY_CONFLICT = "IDEMPOTENCY_CONFLICT"
    REQUEST_TOO_LARGE = "REQUEST_TOO_LARGE"
    # The request's own head and pace (docs/connection.md): beyond the contract's codes.
    REQUEST_TIMEOUT = "REQUEST_TIMEOUT"
    URI_TOO_LONG = "URI_TOO_LONG"
    HEADERS_TOO_LARGE = "HEADERS_TOO_LARGE"
    RANGE_NOT_SATISFIABLE = "RANGE_NOT_SATISFIABLE"
    RATE_LIMITED = "RATE_LIMITED"
    PLATFORM_DISABLED = "PLATFORM_DISABLED"
    DEPENDENCY_UNAVAILABLE = "DEPENDENCY_UNAVAILABLE"
    STORAGE_FULL = "STORAGE_FULL"        # the disk cannot take the write
    NOT_READY = "NOT_READY"              # /readyz when database or disk fails
    CSRF_FAILED = "CSRF_FAILED"          # the sandbox: a change without the page's CSRF token
    INTERNAL_ERROR = "INTERNAL_ERROR"

    @property
    def http_status(self) -> int:
        return _HTTP_STATUS[self]


class Reason(StrEnum):
    """``parameters.reason`` of an INVALID_PARAMETER: which policy refused the
    value, a stable snake_case word. One list for the document
    and the code; ``media_rejected`` refuses any other word."""
    # The media pipeline (app/botsvc/media/README.md says when each applies) and quota.
    UNSUPPORTED_TYPE = "unsupported_type"
    TYPE_MISMATCH = "type_mismatch"
    DOUBLE_EXTENSION = "double_extension"
    EMPTY_FILE = "empty_file"
    CORRUPT_FILE = "corrupt_file"
    INFECTED = "infected"
    SCAN_LIMIT_EXCEEDED = "scan_limit_exceeded"
    DIMENSIONS = "dimensions"
    ANIMATED_IMAGE = "animated_image"
    DURATION = "duration"
    STREAMS = "streams"
    PDF_ACTIVE = "pdf_active"
    PDF_LINKED = "pdf_linked"
    PDF_FORM = "pdf_form"
    PDF_EMBEDDED = "pdf_embedded"
    PDF_ENCRYPTED = "pdf_encrypted"
    PDF_TOO_COMPLEX = "pdf_too_complex"
    PDF_DAMAGED = "pdf_damaged"
    POLYGLOT = "polyglot"
    TRAILING_DATA = "trailing_data"
    TEXT_INVALID = "text_invalid"
    TEXT_TOO_LARGE = "text_too_large"
    ACTIVE_MARKUP = "active_markup"
    QUOTA_EXCEEDED = "quota_exceeded"
    # setWebhook's url (docs/webhooks.md).
    CONTROL_CHARACTERS = "control_characters"
    TOO_LONG = "too_long"
    MALFORMED = "malformed"
    SCHEME = "scheme"
    CREDENTIALS = "credentials"
    FRAGMENT = "fragment"
    PORT = "port"
    HOST = "host"
    IP_LITERAL = "ip_literal"
    RESERVED_NAME = "reserved_name"
    SINGLE_LABEL = "single_label"
    NON_PUBLIC_ADDRESS = "non_public_address"
    # resendCall: why a call of the bot's log cannot be sent again
    # (docs/testing-tools.md).
    PARAMS_NOT_KEPT = "params_not_kept"
    FILE_UPLOAD = "file_upload"
    UNKNOWN_METHOD = "unknown_method"


# The words an upload can be refused with: the first group of ``Reason``
# (the media pipeline's policies and the quota).
UPLOAD_REASONS: tuple[Reason, ...] = tuple(Reason)[:list(Reason).index(Reason.CONTROL_CHARACTERS)]


_HTTP_STATUS = {
    ErrorCode.INVALID_PARAMETER: 400,
    ErrorCode.INVALID_JSON: 400,
    ErrorCode.UNAUTHORIZED: 401,
    ErrorCode.BOT_NOT_STARTED: 403,
    ErrorCode.BOT_BLOCKED: 403,
    ErrorCode.BOT_DISABLED: 403,
    ErrorCode.CHAT_NOT_FOUND: 404,
    ErrorCode.MESSAGE_NOT_FOUND: 404,
    ErrorCode.BROADCAST_NOT_FOUND: 404,
    ErrorCode.FILE_NOT_FOUND: 404,
    ErrorCode.METHOD_NOT_FOUND: 404,
    ErrorCode.METHOD_NOT_ALLOWED: 405,
    ErrorCode.WEBHOOK_ACTIVE: 409,
    ErrorCode.IDEMPOTENCY_CONFLICT: 409,
    ErrorCode.REQUEST_TOO_LARGE: 413,
    ErrorCode.REQUEST_TIMEOUT: 408,
    ErrorCode.URI_TOO_LONG: 414,
    ErrorCode.HEADERS_TOO_LARGE: 431,
    ErrorCode.RANGE_NOT_SATISFIABLE: 416,  # the download route only
    ErrorCode.RATE_LIMITED: 429,
    ErrorCode.PLATFORM_DISABLED: 503,
    ErrorCode.DEPENDENCY_UNAVAILABLE: 503,
    ErrorCode.STORAGE_FULL: 503,
    ErrorCode.NOT_READY: 503,
    ErrorCode.CSRF_FAILED: 403,
    ErrorCode.INTERNAL_ERROR: 500,
}


# What any route can answer about the request's head and pace (app/botsvc/connection/request_head.py,
# app/botsvc/gunicorn_worker.py).
CONNECTION_ERRORS = (ErrorCode.REQUEST_TIMEOUT, ErrorCode.URI_TOO_LONG,
                     ErrorCode.HEADERS_TOO_LARGE)


class ApiError(Exception):
    """A failure in the contract's envelope. ``parameters`` must never hold a
    token, a stack trace or a disk path: it is sent to the client as is."""

    def __init__(self, code: ErrorCode, description: str, **parameters):
        super().__init__(description)
        self.code = code
        self.description = description
        self.parameters = parameters

    @property
    def http_status(self) -> int:
        return self.code.http_status

    def headers(self) -> dict[str, str]:
        # Every answer that tells the client when to come back says it in the
        # header too (RATE_LIMITED, a running Idempotency-Key), as the contract says.
        if "retry_after" in self.parameters:
            return {"Retry-After": str(self.parameters["retry_after"])}
        return {}

    def body(self) -> dict:
        return {
            "ok": False,
            "error_code": self.code.value,
            "description": self.description,
            "parameters": self.parameters,
        }


class RateLimited(ApiError):
    """429 with ``parameters.retry_after`` (and so the matching Retry-After header)."""

    def __init__(self, retry_after: float, limit: str):
        seconds = max(1, math.ceil(retry_after))
        super().__init__(
            ErrorCode.RATE_LIMITED,
            f"Too many requests: {limit} limit exceeded, retry after {seconds} s",
            retry_after=seconds,
        )


class MethodNotAllowed(ApiError):
    """405, with the ``Allow`` header RFC 9110 requires."""

    def __init__(self, allowed: tuple[str, ...], description: str):
        super().__init__(ErrorCode.METHOD_NOT_ALLOWED, description)
        self.allowed = allowed

    def headers(self) -> dict[str, str]:
        return {"Allow": ", ".join(self.allowed)}


def invalid(field: str, description: str, **extra) -> ApiError:
    """INVALID_PARAMETER naming the offending field, as the contract requires."""
    return ApiError(ErrorCode.INVALID_PARAMETER, description, field=field, **extra)


def media_rejected(field: str, reason: Reason | str, description: str) -> ApiError:
    """A media policy failure: INVALID_PARAMETER with its ``Reason`` (a plain
    word, as the PDF inspector's process reports it, must be one of them)."""
    return invalid(field, description, reason=Reason(reason))


def dependency_unavailable(dependency: str, description: str) -> ApiError:
    """Fail closed: a scanner or media tool is missing or failing (503)."""
    return ApiError(ErrorCode.DEPENDENCY_UNAVAILABLE, description, dependency=dependency)
