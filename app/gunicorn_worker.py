"""botsvc's gunicorn worker: gthread, plus what its connections need.

- The app can close the connection for real (app/wire.py): gunicorn drops a
  ``Connection: close`` header the app sets, so the request being served is
  handed to the app through a thread-local, where ``close_connection`` sets
  gunicorn's own flag (the one ``max_requests`` uses).
- A request head past gunicorn's own limits (set far above ours, which the
  app enforces) is answered in the contract's envelope, not gunicorn's HTML.
- Reading a request has a deadline. gthread gives each request a thread
  that blocks on the socket while it reads the head and the body, with no
  deadline: eight clients sending a byte a second held every thread of a
  worker. Now, counted from the request being ready to serve, the head must
  arrive within HEAD_SECONDS, and the whole request at BODY_MIN_RATE bytes a
  second after a BODY_GRACE_SECONDS start, within BODY_MAX_SECONDS; a client too slow
  gets 408 REQUEST_TIMEOUT and the connection closes. Bytes already waiting
  in the kernel are always taken, whatever the clock says: a request that
  waited for a busy worker is not the client's fault. A thread is still held
  while a client is slow within these bounds; a reverse proxy that buffers
  whole requests (nginx, Caddy) holds none (docs/connection.md).
"""
from __future__ import annotations

import secrets
import select
import socket
import time

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


HEAD_SECONDS = 10.0
BODY_GRACE_SECONDS = 10.0
BODY_MIN_RATE = 500            # bytes a second, as Apache's mod_reqtimeout
BODY_MAX_SECONDS = 900.0       # as gunicorn's timeout: a long upload on a slow link


class DeadlineSocket:
    """The connection's socket, whose reads keep the current request's deadline
    (the rest of what gunicorn does with it passes through)."""

    def __init__(self, sock: socket.socket):
        self._sock = sock
        self._phase = None          # None (free reads), "head" or "body"
        self._started = self._received = 0.0

    def __getattr__(self, name):
        return getattr(self._sock, name)

    def start(self) -> None:
        """A request begins: its head is due first."""
        self._phase, self._started, self._received = "head", time.monotonic(), 0

    def reading_body(self) -> None:
        # The same clock: a request that waited for a thread was already late.
        self._phase = "body"

    def stop(self) -> None:
        self._phase = None

    def _deadline(self) -> float:
        if self._phase == "head":
            return self._started + HEAD_SECONDS
        return self._started + min(BODY_MAX_SECONDS,
                                   BODY_GRACE_SECONDS + self._received / BODY_MIN_RATE)

    def recv(self, size: int, flags: int = 0) -> bytes:
        if self._phase is None:
            return self._sock.recv(size, flags)
        try:
            data = self._sock.recv(size, flags | socket.MSG_DONTWAIT)
        except BlockingIOError:
            remaining = self._deadline() - time.monotonic()
            ready = select.poll()
            ready.register(self._sock, select.POLLIN)
            if remaining <= 0 or not ready.poll(remaining * 1000):
                return self._expire()
            data = self._sock.recv(size, flags)
        self._received += len(data)
        return data

    def _expire(self) -> bytes:
        if self._phase == "body":
            # Inside the app: app/__init__.py answers it in the envelope.
            raise wire.ReadDeadlineExceeded()
        # No request reached the app: answer here, and end it as a client that
        # went away (gunicorn closes quietly).
        self._phase = None
        try:
            self._sock.sendall(raw_answer(wire.request_timeout()))
        except OSError:
            pass
        return b""


class BotsvcWorker(ThreadWorker):
    def enqueue_req(self, conn):
        # The clock of a request starts when it is ready to be served: a new
        # connection, or a kept-alive one that has become readable.
        if not isinstance(conn.sock, DeadlineSocket):
            conn.sock = DeadlineSocket(conn.sock)   # before the parser is made on it
        conn.sock.start()
        super().enqueue_req(conn)

    def handle(self, conn):
        try:
            return super().handle(conn)
        finally:
            conn.sock.stop()   # gunicorn's own drain and close read freely

    def handle_request(self, req, conn):
        conn.sock.reading_body()
        wire.current.request = req
        try:
            return super().handle_request(req, conn)
        finally:
            wire.current.request = None
            conn.sock.stop()

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
