"""The HTTP connection under the app: what a request's body leaves on the wire.

A client that reuses a kept-alive connection sends its next request right
after this one's body. When the app answers without reading the whole body
(413, 401 before an upload is read), the unread rest must go before the
next request can be parsed. gunicorn drains at most 64 KiB of it *after* it
has already announced ``Connection: keep-alive``, then closes: a
``requests.Session`` then fails its next call with ``RemoteDisconnected``.
And gunicorn drops a ``Connection: close`` header the app sets (hop-by-hop).

So, after the app has answered and before gunicorn sends the answer
(``settle_body``), the rest of the body is read and discarded up to
``DRAIN_MAX_BYTES``: the connection stays usable. A body that would go past
that bound is not read: the connection is closed for real, and the answer
says so (``close_connection``, through the worker of app/gunicorn_worker.py).
Reading is bounded in time as well as bytes: the worker's read deadline
applies to the drain too.
"""
from __future__ import annotations

import threading

from app.errors import ApiError, ErrorCode

DRAIN_MAX_BYTES = 16 * 1024 * 1024
# The request head the service takes (docs/connection.md): what nginx
# and Apache pass by default. gunicorn's own limits (app/gunicorn_conf.py) are
# set far above, so that these answer in the envelope.
REQUEST_LINE_MAX_BYTES = 8190
HEADER_FIELD_MAX_BYTES = 8190
HEADER_FIELDS_MAX = 100
_CHUNK = 256 * 1024

# The gunicorn request being served by this thread, set by the worker
# (app/gunicorn_worker.py); absent under Flask's test client.
current = threading.local()


class ReadDeadlineExceeded(Exception):
    """The client sent its request too slowly (app/gunicorn_worker.py): raised
    from a read of the body, answered 408 REQUEST_TIMEOUT, and the connection
    closes (whatever else is in flight on it is unknown)."""


def request_timeout() -> ApiError:
    return ApiError(ErrorCode.REQUEST_TIMEOUT, "The request was sent too slowly; "
                    "the connection is closed")


def close_connection() -> None:
    """Make the answer carry ``Connection: close`` and close the connection
    after it (gunicorn's own flag, as for its ``max_requests``)."""
    request = getattr(current, "request", None)
    if request is not None:
        request.must_close = True


def refuse_oversized_head(environ: dict) -> None:
    """414 URI_TOO_LONG for a request line over REQUEST_LINE_MAX_BYTES; 431
    HEADERS_TOO_LARGE for a header field (``Name: value``) over
    HEADER_FIELD_MAX_BYTES or more than HEADER_FIELDS_MAX fields. Header lines
    repeating a name arrive joined into one field, and count as one."""
    target = environ.get("RAW_URI") or (environ.get("PATH_INFO", "") + "?"
                                        + environ.get("QUERY_STRING", ""))
    line = len(environ.get("REQUEST_METHOD", "")) + len(target) \
        + len(environ.get("SERVER_PROTOCOL", "")) + 2
    if line > REQUEST_LINE_MAX_BYTES:
        raise head_too_large(ErrorCode.URI_TOO_LONG, REQUEST_LINE_MAX_BYTES)
    fields = 0
    for key, value in environ.items():
        if key.startswith("HTTP_"):
            name_length = len(key) - 5
        elif key in ("CONTENT_TYPE", "CONTENT_LENGTH"):
            name_length = len(key)
        else:
            continue
        fields += 1
        if name_length + 2 + len(value) > HEADER_FIELD_MAX_BYTES:
            raise head_too_large(ErrorCode.HEADERS_TOO_LARGE, HEADER_FIELD_MAX_BYTES)
    if fields > HEADER_FIELDS_MAX:
        raise too_many_fields()


def too_many_fields() -> ApiError:
    return ApiError(ErrorCode.HEADERS_TOO_LARGE, f"More than {HEADER_FIELDS_MAX} header fields",
                    limit=HEADER_FIELDS_MAX)


def head_too_large(code: ErrorCode, limit: int) -> ApiError:
    what = "Request line" if code is ErrorCode.URI_TOO_LONG else "A header field"
    return ApiError(code, f"{what} is longer than {limit} bytes", limit=limit)


def settle_body(environ: dict) -> None:
    """Read and discard what the app left of the request body, up to
    DRAIN_MAX_BYTES; close the connection if that is not the whole body."""
    if getattr(current, "request", None) is None:
        return   # not under our gunicorn worker: nothing is kept alive
    stream = environ.get("wsgi.input")
    left = _declared_rest(environ, stream)
    if left is not None and left > DRAIN_MAX_BYTES:
        close_connection()
        return
    drained = 0
    try:
        while drained <= DRAIN_MAX_BYTES:
            chunk = stream.read(_CHUNK)
            if not chunk:
                return
            drained += len(chunk)
    except Exception:   # noqa: BLE001 - too slow, cut, or a bad chunk: where the next request starts is unknown
        pass
    close_connection()


def settling_bodies(wsgi_app):
    """``app.wsgi_app`` that settles each request's body once the app has
    answered, before gunicorn sends the answer (headers go out on its first write)."""
    def settled(environ, start_response):
        answer = wsgi_app(environ, start_response)
        settle_body(environ)
        return answer
    return settled


def _declared_rest(environ: dict, stream) -> int | None:
    """The unread bytes of a body of known length (None for a chunked one)."""
    reader = getattr(stream, "reader", None)
    length = getattr(reader, "length", None)   # gunicorn's LengthReader counts down
    if isinstance(length, int):
        return length
    return None
