"""botsvc's gunicorn worker: gthread, plus what its connections need.

- The app can close the connection for real (app/wire.py): gunicorn drops a
  ``Connection: close`` header the app sets, so the request being served is
  handed to the app through a thread-local, where ``close_connection`` sets
  gunicorn's own flag (the one ``max_requests`` uses).
- A request head past gunicorn's own limits (set far above ours, which the
  app enforces) is answered in the contract's envelope, not gunicorn's HTML.
"""
from __future__ import annotations

import secrets

from gunicorn import util
from gunicorn.http.errors import LimitRequestHeaders, LimitRequestLine
from gunicorn.workers.gthread import ThreadWorker

from app import wire
from app.errors import ApiError, ErrorCode
from app.jsontext import dumps

_REASONS = {408: "Request Timeout", 414: "URI Too Long", 431: "Request Header Fields Too Large"}


def raw_answer(error: ApiError) -> bytes:
    """A whole HTTP/1.1 answer in the envelope, for when no request reached
    the app; the connection closes after it."""
    body = dumps(error.body()).encode()
    status = error.http_status
    head = (f"HTTP/1.1 {status} {_REASONS[status]}\r\n"
            "Content-Type: application/json\r\n"
            f"Content-Length: {len(body)}\r\n"
            f"X-Request-Id: {secrets.token_hex(16)}\r\n"
            "Connection: close\r\n\r\n")
    return head.encode("latin-1") + body


class BotsvcWorker(ThreadWorker):
    def handle_request(self, req, conn):
        wire.current.request = req
        try:
            return super().handle_request(req, conn)
        finally:
            wire.current.request = None

    def handle_error(self, req, client, addr, exc):
        if isinstance(exc, LimitRequestLine):
            error = wire.head_too_large(ErrorCode.URI_TOO_LONG, wire.REQUEST_LINE_MAX_BYTES)
        elif isinstance(exc, LimitRequestHeaders) and "size" in str(exc):
            error = wire.head_too_large(ErrorCode.HEADERS_TOO_LARGE, wire.HEADER_FIELD_MAX_BYTES)
        elif isinstance(exc, LimitRequestHeaders):
            error = wire.too_many_fields()
        else:
            return super().handle_error(req, client, addr, exc)
        self.log.warning("Invalid request from ip=%s: %s", (addr or ("",))[0], exc)
        try:
            util.write(client, raw_answer(error))
        except OSError:
            self.log.debug("Failed to send error message.")
