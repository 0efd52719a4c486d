"""GET and HEAD {base_url}/download.php: a file's bytes, for its bot.

Two ways in (SPEC "Download route", DECISIONS §4-5):
- bearer: ``Authorization: Bearer <bot token>`` and ``?file_id=``; a file of
  another bot is FILE_NOT_FOUND, exactly like an unknown one;
- signed: ``?id=&exp=&sig=`` as getFile returned it; the bot is the file's
  owner, taken from its row. A bad, expired or tampered link is UNAUTHORIZED.

Checks run in the order of every other route: platform, credentials, bot
disabled, parameters, the file. The bytes are streamed from an open file
(never read whole); one byte range is served as 206, anything else in a Range
header is 416 with ``Content-Range: bytes */SIZE``. The access log records the
path only, so a signed link (a bearer capability) never reaches a log.
"""
from __future__ import annotations

import os
import re
import sqlite3
from urllib.parse import quote

from flask import Blueprint, Response, current_app, request
from werkzeug.wsgi import wrap_file

from app import clock
from app.auth import authenticate_bot, bearer_token, bot_disabled, platform_disabled
from app.db import get_db
from app.domain import file_links, files
from app.domain.bots import is_platform_disabled, require_bot
from app.errors import ApiError, ErrorCode, MethodNotAllowed, invalid

bp = Blueprint("download", __name__)
ALL_HTTP_METHODS = ["GET", "HEAD", "POST", "PUT", "PATCH", "DELETE", "OPTIONS"]
SIGNED_PARAMS = ("id", "exp", "sig")
BEARER_PARAMS = ("file_id",)
CHUNK_BYTES = 64 * 1024
# One range only: first-last, first- or -suffix. Digits are bounded so that a
# huge number is a 416, not a big integer.
# Positions of any size are satisfiable (an end past the file is cut to it);
# 1000 digits keeps int() far below Python's conversion limit.
_RANGE = re.compile(r"^bytes=[ \t]*([0-9]{0,1000})-([0-9]{0,1000})[ \t]*\Z", re.IGNORECASE)
# Printable ASCII that needs no escaping inside a quoted filename; the rest
# becomes "_" in the fallback (filename* carries the real name).
_FALLBACK_UNSAFE = re.compile(r'[^\x20-\x7e]|["\\%]')
_ATTR_CHAR_EXTRA = "!#$&+^`|"  # RFC 5987 attr-char beyond what quote() keeps


class RangeNotSatisfiable(ApiError):
    def __init__(self, size: int):
        super().__init__(ErrorCode.RANGE_NOT_SATISFIABLE,
                         "The Range header is not one satisfiable byte range", field="Range",
                         size=size)
        self.size = size

    def headers(self) -> dict[str, str]:
        return {"Content-Range": f"bytes */{self.size}", "Accept-Ranges": "bytes"}


def file_not_found() -> ApiError:
    return ApiError(ErrorCode.FILE_NOT_FOUND, "File not found", field="file_id")


@bp.route(file_links.ROUTE, methods=ALL_HTTP_METHODS, provide_automatic_options=False)
def download() -> Response:
    if request.method not in ("GET", "HEAD"):
        raise MethodNotAllowed(("GET", "HEAD"), "The download route answers GET and HEAD")
    conn = get_db()
    if any(name in request.args for name in SIGNED_PARAMS):
        row = _signed_file(conn)
    else:
        row = _bearer_file(conn)
    return file_response(row)


def _single(name: str, on_repeat: ApiError | None = None) -> str | None:
    values = request.args.getlist(name)
    if len(values) > 1:
        raise on_repeat or invalid(name, f"Parameter {name} is given more than once")
    return values[0] if values else None


def _reject_unknown(allowed: tuple[str, ...]) -> None:
    for name in request.args:
        if name not in allowed:
            raise invalid(name, f"Unknown parameter: {name}")


def _bearer_file(conn: sqlite3.Connection) -> sqlite3.Row:
    bot = authenticate_bot(conn, bearer_token(request.headers.get("Authorization")))
    if bot.disabled:
        raise bot_disabled()
    _reject_unknown(BEARER_PARAMS)
    file_id = _single("file_id")
    if not file_id:
        raise invalid("file_id", "file_id is required (or use the signed URL from getFile)")
    row = files.find_clean_file(conn, bot.id, file_id)
    if row is None:
        # Malformed ids included: like chat_id, any string that is not one of
        # this bot's files is simply not found.
        raise file_not_found()
    return row


def _signed_file(conn: sqlite3.Connection) -> sqlite3.Row:
    if is_platform_disabled(conn):
        raise platform_disabled()
    clock.refresh(conn)  # no token query here to bring the offset along
    bad_link = ApiError(ErrorCode.UNAUTHORIZED, "The download link is invalid")
    file_id = _single("id", bad_link) or ""
    exp = file_links.parse_exp(_single("exp", bad_link))
    sig = _single("sig", bad_link)
    row = files.find_clean_file(conn, None, file_id)
    secret = current_app.config["SETTINGS"].secret_key
    # Unknown ids are compared too (against bot 0), so timing tells nothing.
    valid = file_links.signature_matches(secret, file_id, row["bot_id"] if row else 0,
                                         exp if exp is not None else 0, sig)
    if not valid or row is None or exp is None:
        raise bad_link
    if exp < clock.time():
        raise ApiError(ErrorCode.UNAUTHORIZED, "The download link has expired")
    if require_bot(conn, row["bot_id"])["disabled"]:
        raise bot_disabled()
    _reject_unknown(SIGNED_PARAMS)
    return row


def content_disposition(file_name: str) -> str:
    fallback = _FALLBACK_UNSAFE.sub("_", file_name) or "file"
    encoded = quote(file_name, safe=_ATTR_CHAR_EXTRA)
    return f"attachment; filename=\"{fallback}\"; filename*=UTF-8''{encoded}"


def byte_range(header: str | None, size: int) -> tuple[int, int] | None:
    """(first, last) of the one range asked for, None for the whole file;
    RangeNotSatisfiable for anything else (several ranges, malformed, outside)."""
    if header is None:
        return None
    match = _RANGE.match(header.strip())
    if match is None or match.group(1) == match.group(2) == "":
        raise RangeNotSatisfiable(size)
    first, last = match.group(1), match.group(2)
    if first == "":
        suffix = int(last)
        if suffix == 0:
            raise RangeNotSatisfiable(size)
        return max(0, size - suffix), size - 1
    start = int(first)
    end = size - 1 if last == "" else int(last)
    if end < start or start >= size:
        raise RangeNotSatisfiable(size)
    return start, min(end, size - 1)


def file_response(row: sqlite3.Row) -> Response:
    settings = current_app.config["SETTINGS"]
    etag = f'"{row["sha256"]}"'
    fh = open(files.storage_path(settings.data_dir, row["storage_name"]), "rb")  # noqa: SIM115
    try:
        size = os.fstat(fh.fileno()).st_size
        wanted = request.headers.get("Range")
        if_range = request.headers.get("If-Range")
        if wanted is not None and if_range is not None and if_range.strip() != etag:
            wanted = None  # the client's copy is stale: send the whole file (RFC 9110 13.1.5)
        span = byte_range(wanted, size)
    except BaseException:
        fh.close()
        raise
    headers = {
        "Content-Type": row["mime_type"],
        "X-Content-Type-Options": "nosniff",
        "Content-Disposition": content_disposition(row["file_name"]),
        "Accept-Ranges": "bytes",
        "ETag": etag,
        "Cache-Control": "private",
        # Should a browser render it anyway, it runs nothing and loads nothing.
        "Content-Security-Policy": "default-src 'none'; sandbox",
    }
    status, start, length = 200, 0, size
    if span is not None:
        status, start, length = 206, span[0], span[1] - span[0] + 1
        headers["Content-Range"] = f"bytes {span[0]}-{span[1]}/{size}"
    headers["Content-Length"] = str(length)
    if request.method == "HEAD":
        fh.close()
        body = []
    elif status == 200:
        body = wrap_file(request.environ, fh, CHUNK_BYTES)  # sendfile where the server can
    else:
        body = RangeBody(fh, start, length)
    return Response(body, status=status, headers=headers, direct_passthrough=True)


class RangeBody:
    """``length`` bytes from ``start``, in chunks. A class, not a generator:
    the server calls ``close()`` even when it never iterated (the client went
    away), and the file must be closed then too."""

    def __init__(self, fh, start: int, length: int):
        self.fh, self.start, self.length = fh, start, length

    def __iter__(self):
        self.fh.seek(self.start)
        remaining = self.length
        while remaining > 0:
            chunk = self.fh.read(min(CHUNK_BYTES, remaining))
            if not chunk:
                return
            remaining -= len(chunk)
            yield chunk

    def close(self) -> None:
        self.fh.close()
