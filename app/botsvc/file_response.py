"""A stored file as an HTTP answer, for the download route and the sandbox:
``flask.send_file`` with the headers the contract fixes.

werkzeug does the conditional part (one byte range as 206, If-Range against
the ETag, streaming from the open file); what is ours is the contract's:
the stored MIME type as it is (no charset added), ``nosniff``, an attachment
with a safe file name, and a Range that is not one satisfiable byte range
answered 416 RANGE_NOT_SATISFIABLE in the envelope with
``Content-Range: bytes */SIZE``.
"""
from __future__ import annotations

import os
import re
import sqlite3
from urllib.parse import quote

from flask import Response, request, send_file
from werkzeug.exceptions import RequestedRangeNotSatisfiable

from botsvc.domain.files import storage_path
from botsvc.errors import ApiError, ErrorCode

# Printable ASCII that needs no escaping inside a quoted filename; the rest
# becomes "_" in the fallback (filename* carries the real name).
_FALLBACK_UNSAFE = re.compile(r'[^\x20-\x7e]|["\\%]')
_ATTR_CHAR_EXTRA = "!#$&+^`|"  # RFC 5987 attr-char beyond what quote() keeps
_CACHE_VALIDATORS = ("HTTP_IF_NONE_MATCH", "HTTP_IF_MODIFIED_SINCE", "HTTP_IF_MATCH",
                     "HTTP_IF_UNMODIFIED_SINCE")
# A suffix range: the last N bytes (1000 digits keeps int() far below Python's
# conversion limit; werkzeug refuses longer numbers itself).
_SUFFIX_RANGE = re.compile(r"^[ \t]*bytes[ \t]*=[ \t]*-[ \t]*([0-9]{1,1000})[ \t]*\Z", re.IGNORECASE)


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


def content_disposition(file_name: str) -> str:
    fallback = _FALLBACK_UNSAFE.sub("_", file_name) or "file"
    encoded = quote(file_name, safe=_ATTR_CHAR_EXTRA)
    return f"attachment; filename=\"{fallback}\"; filename*=UTF-8''{encoded}"


def file_response(row: sqlite3.Row, data_dir: str) -> Response:
    """The bytes of the stored file ``row`` (a ``files`` row), streamed; bytes
    gone since the row was read (app/botsvc/domain/files.py: bytes_present)
    are FILE_NOT_FOUND, never a 500."""
    try:
        return _streamed(row, data_dir)
    except FileNotFoundError:
        raise file_not_found() from None


def _streamed(row: sqlite3.Row, data_dir: str) -> Response:
    path = storage_path(data_dir, row["storage_name"])
    # The contract's answers are 200, 206 and 416; a cache's validators would
    # have werkzeug answer 304 or 412. The ETag serves If-Range only.
    for validator in _CACHE_VALIDATORS:
        request.environ.pop(validator, None)
    wanted = request.headers.get("Range")
    if wanted is not None:
        size = os.path.getsize(path)
        if size == 0:
            raise RangeNotSatisfiable(0)   # werkzeug ignores a Range on an empty file
        suffix = _SUFFIX_RANGE.match(wanted)
        if suffix and int(suffix.group(1)) >= size:
            # RFC 9110 14.1.2: a suffix longer than the file means all of it;
            # werkzeug answers 416 instead.
            request.environ["HTTP_RANGE"] = "bytes=0-"
    try:
        response = send_file(path, mimetype=row["mime_type"], etag=row["sha256"],
                             download_name=row["file_name"], conditional=True, max_age=None)
    except RequestedRangeNotSatisfiable as unsatisfiable:
        raise RangeNotSatisfiable(unsatisfiable.length) from None
    del response.headers["Last-Modified"]   # a date If-Range then sends the whole file
    response.headers.update({
        "Content-Type": row["mime_type"],   # as stored: send_file would add a charset
        "X-Content-Type-Options": "nosniff",
        "Content-Disposition": content_disposition(row["file_name"]),
        "Accept-Ranges": "bytes",
        "Cache-Control": "private",
        # Should a browser render it anyway, it runs nothing and loads nothing.
        "Content-Security-Policy": "default-src 'none'; sandbox",
    })
    return response
