"""Reading a request body into plain parameters, before any validation.

JSON bodies are capped at 1 MiB *before* they are read whole (REQUEST_TOO_LARGE,
413) and must be one JSON object of valid UTF-8 (INVALID_JSON, 400). Multipart
bodies stream their files into the private quarantine directory under random
names, never into memory and never under the client's file name, capped at
the upload ceiling while streaming.
"""
from __future__ import annotations

import hashlib
import json
import os
import re
import tempfile
from dataclasses import dataclass, field

from flask import Request, current_app
from werkzeug.exceptions import RequestEntityTooLarge

from botsvc import owner, write_guard
from botsvc.catalogue.validation import Str, UploadedFile
from botsvc.config import JSON_BODY_LIMIT
from botsvc.connection.body import FORM_TYPES, too_large
from botsvc.errors import ApiError, ErrorCode, invalid

_SURROGATE_ESCAPE = re.compile(rb"\\u[dD][89a-fA-F]")


@dataclass
class RequestBody:
    params: dict
    files: dict[str, UploadedFile] = field(default_factory=dict)
    is_form: bool = False
    # A JSON body that did not parse: its INVALID_JSON error, answered at the
    # validation step (after idempotency and rate limits, in the
    # contract's order), and the SHA-256 of its bytes, its only fingerprint.
    invalid: ApiError | None = None
    raw_sha256: str | None = None
    # A JSON body's text as sent (for the call log, which keeps it as it is
    # when that is short: no second encoding).
    raw: bytes | None = None

    def fingerprint_source(self) -> dict:
        """What idempotency compares: the values, and each file's SHA-256 with
        the name and type it was declared with (both change the result)."""
        if self.raw_sha256 is not None:
            return {"unparsed_body": self.raw_sha256}
        return {"params": self.params,
                "files": {name: [f.sha256, f.file_name, f.content_type]
                          for name, f in sorted(self.files.items())}}


class BotsvcRequest(Request):
    """Flask's request, with uploaded files streamed into the quarantine dir."""

    def _get_file_stream(self, total_content_length, content_type, filename=None,
                         content_length=None):
        quarantine = current_app.config["QUARANTINE_DIR"]
        # Deleted when the request closes its files, unless moved away first;
        # named after this process, so a crash's leftover is swept at the next start.
        return tempfile.NamedTemporaryFile(dir=quarantine, prefix=owner.file_prefix("upload"),
                                           delete=True)


def is_form_request(request: Request) -> bool:
    return (request.mimetype or "") in FORM_TYPES


def parse_body(request: Request, upload_limit: int) -> RequestBody:
    body = _parse_form(request, upload_limit) if is_form_request(request) else _parse_json(request)
    # The body is done with, read or not: Werkzeug reads nothing of a form it
    # cannot parse (a multipart type with no boundary gives an empty form), so
    # the stream's first read never comes, and the write guard would refuse
    # the call's own writes (a 500). Nothing reads this body again, so the
    # request can no longer be parked.
    write_guard.lift()
    return body


def _parse_json(request: Request) -> RequestBody:
    length = request.content_length
    if length is not None and length > JSON_BODY_LIMIT:
        raise too_large(JSON_BODY_LIMIT)
    raw = request.stream.read(JSON_BODY_LIMIT + 1)
    if len(raw) > JSON_BODY_LIMIT:
        raise too_large(JSON_BODY_LIMIT)
    if not raw:
        return RequestBody({})
    try:
        return RequestBody(decode_json_object(raw), raw=raw)
    except ApiError as error:
        return RequestBody({}, invalid=error, raw_sha256=hashlib.sha256(raw).hexdigest())


def _reject_constant(name: str):
    raise ValueError(f"{name} is not JSON")


def _no_duplicate_keys(pairs):
    obj = {}
    for key, value in pairs:
        if key in obj:
            raise ValueError(f"duplicate key {key!r}")
        obj[key] = value
    return obj


def decode_json_object(raw: bytes) -> dict:
    """Strict JSON: UTF-8, no NaN/Infinity, no duplicate keys, no lone
    surrogates (they could not be stored or measured in bytes), one object."""
    try:
        text = raw.decode("utf-8")
        value = json.loads(text, parse_constant=_reject_constant,
                           object_pairs_hook=_no_duplicate_keys)
        if _SURROGATE_ESCAPE.search(raw):
            json.dumps(value, ensure_ascii=False).encode("utf-8")
    except (UnicodeError, ValueError, RecursionError) as exc:
        raise ApiError(ErrorCode.INVALID_JSON, f"Request body is not valid JSON: {_short(exc)}") \
            from None
    if not isinstance(value, dict):
        raise ApiError(ErrorCode.INVALID_JSON, "Request body must be a JSON object")
    return value


def _short(exc: Exception) -> str:
    if isinstance(exc, UnicodeError):
        return "not valid UTF-8"
    return str(exc).split("\n")[0][:200]


def _parse_form(request: Request, upload_limit: int) -> RequestBody:
    length = request.content_length
    if length is not None and length > upload_limit:
        raise too_large(upload_limit)
    # gunicorn marks its input as terminated, so Werkzeug enforces this as a
    # cap and refuses on *reaching* it, unable to tell whether more follows: a
    # body of exactly the ceiling would be refused. One byte more is the cap.
    request.max_content_length = upload_limit + 1
    try:
        form, files = request.form, request.files
    except RequestEntityTooLarge:
        raise too_large(upload_limit) from None
    params: dict = {}
    for name in form:
        values = form.getlist(name)
        if len(values) != 1 or name in files:
            raise invalid(name, f"Parameter {name} is given more than once")
        params[name] = values[0]
    uploaded: dict[str, UploadedFile] = {}
    for name in files:
        parts = files.getlist(name)
        if len(parts) != 1:
            raise invalid(name, f"Parameter {name} is given more than once")
        uploaded[name] = _quarantined(name, parts[0])
    return RequestBody(params, uploaded, is_form=True,
                       invalid=_json_sent_as_form(request, params, uploaded))


def _json_sent_as_form(request: Request, params: dict, files: dict) -> ApiError | None:
    """``curl -d '{"chat_id": ...}'`` sends JSON text labelled as a form: its
    one "parameter" is the whole JSON text. It stays the INVALID_PARAMETER an
    unknown parameter is (field: that name), answered at the validation step,
    but the description says what happened and what to send instead."""
    if files or len(params) != 1:
        return None
    name, value = next(iter(params.items()))
    # A form splits JSON text at its first "=" (inside a string value).
    candidates = (name, f"{name}={value}") if value else (name,)
    for text in candidates:
        try:
            if isinstance(json.loads(text), (dict, list)):
                break
        except (ValueError, RecursionError):
            continue
    else:
        return None
    shown = name if len(name) <= 60 else name[:57] + "..."
    return invalid(name, f"Unknown parameter: {shown}. The body was read as a form "
                         f"(Content-Type: {request.mimetype}, what curl -d sends); to send "
                         "JSON, send the header Content-Type: application/json "
                         "(curl --json, or -H 'Content-Type: application/json')")


def _quarantined(name: str, storage) -> UploadedFile:
    stream = storage.stream
    stream.flush()
    digest = hashlib.sha256()
    stream.seek(0)
    for chunk in iter(lambda: stream.read(1 << 20), b""):
        digest.update(chunk)
    size = stream.tell()
    stream.seek(0)
    path = getattr(stream, "name", None)
    if not isinstance(path, str) or not os.path.isfile(path):
        raise RuntimeError("uploaded file was not streamed to quarantine")
    return UploadedFile(name, path, storage.filename or "", storage.mimetype or None,
                        size, digest.hexdigest())


def coerce_form_values(schema_fields: dict, params: dict) -> dict:
    """Multipart values arrive as text; a parameter whose field is not a string
    is read as JSON (``reply_markup``, ``reply_to_message_id``, booleans), so
    that both transports meet one schema."""
    coerced = {}
    for name, value in params.items():
        spec = schema_fields.get(name)
        if spec is None or isinstance(spec, Str):
            coerced[name] = value
            continue
        try:
            coerced[name] = json.loads(value, parse_constant=_reject_constant)
        except (ValueError, RecursionError):
            coerced[name] = value  # left as text: validation reports the type
    return coerced
