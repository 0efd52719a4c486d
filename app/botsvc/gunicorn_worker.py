"""botsvc's gunicorn worker: gthread, plus what its connections need
(docs/connection.md), and a quit path that leaves at once. The gunicorn
internals it relies on are named in tests/infra/test_gunicorn_internals.py
(setup.cfg pins one minor range).

- A request head is read by the main loop, which holds no thread, within the
  limits of app/botsvc/connection/request_head.py, and handed to gunicorn's parser
  whole (its own reads cost time in the square of a head's length). Past a
  limit: 414/431; not whole within HEAD_SECONDS: 408, in the envelope.
  Bytes already waiting are taken before a deadline is called.
- A body that has not all arrived holds no thread either, whatever its
  framing: the app's first read of it parks the request
  (app/botsvc/connection/body.py), the main loop reads the rest under the deadline a
  thread had (app/botsvc/connection/sockets.py), within the spool's bounds
  (app/botsvc/connection/spool.py), then hands the request to a thread again from
  its first byte. The main loop's part is app/botsvc/connection/main_loop.py.
- A kept-alive connection whose time is up is served, not closed, when a
  request has begun to arrive on it.
- The app can close the connection for real, and read only what has arrived
  (app/botsvc/connection/wire.py), through the request handed to it in a thread-local.
- Closing never waits: FIN after the answer, then what the client still
  sends is dropped by the main loop (``sockets.Lingering``), so that it reads its
  answer rather than a reset.
"""
from __future__ import annotations

import contextlib
import os
import sys
import time
from functools import partial
from http import HTTPStatus

from gunicorn import util
from gunicorn.http.errors import LimitRequestHeaders, LimitRequestLine
from gunicorn.workers.gthread import ThreadWorker

from botsvc import commits
from botsvc.config import Settings
from botsvc.connection import body, request_head, sockets, spool, wire
from botsvc.connection.main_loop import HEAD_SECONDS, Arriving, MainLoopReading, ip_of
from botsvc.errors import ApiError
from botsvc.jsontext import dumps
from botsvc.logs import HEADER as REQUEST_ID_HEADER
from botsvc.logs import request_id_for

_PARKED = object()       # what handle() returns for a request the app parked

_REASONS = {408: "Request Timeout", 414: "URI Too Long", 431: "Request Header Fields Too Large"}


def raw_answer(error: ApiError, presented_id: str | None = None) -> bytes:
    """A whole HTTP/1.1 answer in the envelope, for when no request reached
    the app; the connection closes after it. It carries the request's own
    X-Request-Id when one had arrived, as every answer does (app/botsvc/logs.py)."""
    payload = dumps(error.body()).encode()
    status = error.http_status
    extra = "".join(f"{name}: {value}\r\n" for name, value in error.headers().items())
    head = (f"HTTP/1.1 {status} {_REASONS.get(status) or HTTPStatus(status).phrase}\r\n"
            "Content-Type: application/json\r\n"
            f"Content-Length: {len(payload)}\r\n"
            f"{REQUEST_ID_HEADER}: {request_id_for(presented_id)}\r\n{extra}"
            "Connection: close\r\n\r\n")
    return head.encode("latin-1") + payload


class BotsvcWorker(MainLoopReading, ThreadWorker):
    @classmethod
    def check_config(cls, cfg, log):
        super().check_config(cfg, log)
        if cfg.is_ssl:
            # The head is read off the raw socket by the main loop.
            raise RuntimeError("botsvc's gunicorn serves plain HTTP on loopback: TLS is the "
                               "reverse proxy's (docs/production.md)")

    def init_process(self):
        settings = Settings.from_env(secret=False)
        self.arriving: dict = {}     # conn -> Arriving
        self.spool_dir = settings.data_dir
        self.upload_max_bytes = settings.upload_max_bytes
        self.ledger = spool.Ledger(spool.Bounds(
            settings.data_dir, settings.min_free_bytes, settings.spool_max_bytes,
            settings.spool_token_max_bytes, settings.spool_token_max_requests))
        super().init_process()       # makes the poller, then runs the loop

    def run(self):
        self.lingering = sockets.Lingering(self.poller, self.closed)
        super().run()

    # -- stopping -------------------------------------------------------------------------

    def handle_exit(self, sig, frame):
        commits.stop_waiting()   # operator reads that wait answer now, not at their end
        super().handle_exit(sig, frame)

    def handle_quit(self, sig, frame):
        """SIGINT or SIGQUIT: gunicorn's quick shutdown, the worker gone at once.
        gthread's own (gunicorn.workers.base.Worker.handle_quit) sleeps 0.1 s
        in the signal handler, then exits through the interpreter's shutdown,
        which waits for the thread pool's requests in flight and takes
        0.1-0.2 s more; and a second quit signal arriving meanwhile (SIGINT
        to the whole group, then the master's SIGQUIT) entered it again and
        could deadlock on the pool's shutdown lock. Here: once only, and out
        through ``os._exit`` once the worker_int hook has run. Every write was
        committed before it was answered; what is cut is as a crash's
        (nothing delivered twice, nothing lost that was answered)."""
        if getattr(self, "quitting", False):
            return
        self.quitting = True
        self.alive = False
        commits.stop_waiting()
        self.cfg.worker_int(self)
        for stream in (sys.stdout, sys.stderr):
            with contextlib.suppress(Exception):
                stream.flush()
        os._exit(0)

    # -- the head, in the main loop ---------------------------------------------------

    def enqueue_req(self, conn):
        """gthread calls this when a connection has a request to serve: a new
        one, a kept-alive one become readable, one with bytes read ahead."""
        if not isinstance(conn.sock, sockets.DeadlineSocket):
            conn.sock = sockets.DeadlineSocket(conn.sock)
        started = conn.sock.start()
        if conn.sock.raw.getblocking():   # after a thread, with bytes read ahead
            conn.sock.raw.setblocking(False)
        arriving = Arriving(conn, started + HEAD_SECONDS)
        ahead = conn.parser.unreader.take_buffered() if conn.parser is not None else b""
        self.read_head(arriving, ahead)

    def to_thread(self, conn) -> None:
        """The request's head (and a parked body) is whole: a thread serves it."""
        ThreadWorker.enqueue_req(self, conn)

    refusal = staticmethod(raw_answer)

    def murder_keepalived(self, force=False):
        # Called by gthread's loop at least once a second: the other deadlines too.
        now = time.monotonic()
        for conn in list(self.keepalived_conns):
            if force or conn.timeout > now:
                break
            if sockets.waiting_bytes(conn.sock.raw):     # a request has begun: serve it
                self.on_client_socket_readable(conn, conn.sock)
        super().murder_keepalived(force)
        for arriving in list(self.arriving.values()):
            if force:
                self.drop(arriving)
            elif arriving.deadline <= now:
                self.readable(arriving, None, last_call=True)
        self.lingering.sweep(force)

    # -- the rest, in a thread -----------------------------------------------------------

    def handle(self, conn):
        sock = conn.sock
        sock.reading()
        try:
            if sock.head is not None:
                conn.init()          # the parser (blocking), which reads the head first
                conn.parser.unreader.unread(sock.head)
                if sock.body_pending:
                    sock.replay = bytearray(sock.head)   # kept, should the app park it
                    sock.head_length = len(sock.head)
                sock.head = None
            return super().handle(conn)
        except body.Parked:
            return _PARKED
        finally:
            sock.stop()   # gunicorn's own drain reads freely

    def handle_request(self, req, conn):
        wire.current.request = req
        wire.current.arrived_only = conn.sock.arrived_only
        if conn.sock.replay is not None:
            wire.current.body_arrived = conn.sock.body_arrived
            wire.current.admit_parked = partial(self._admit, conn.sock)
        try:
            return super().handle_request(req, conn)
        finally:
            wire.current.request = wire.current.arrived_only = None
            wire.current.body_arrived = wire.current.admit_parked = None
            conn.sock.stop()

    def _admit(self, dsock: sockets.DeadlineSocket, environ: dict) -> None:
        """In the thread, before the request parks: the spool's bounds admit it,
        or the app answers their refusal (app/botsvc/connection/spool.py)."""
        expected = max(0, dsock.body_length - dsock.body_in_head)   # chunked: as it comes
        dsock.holding = self.ledger.admit(spool.caller_of(environ), expected)

    def finish_request(self, conn, fs):
        if not fs.cancelled() and fs.exception() is None and fs.result() is _PARKED:
            return self.park(conn)
        # What is left of a spooled body is the unread rest of this one's
        # (wire.settle_body took it all, or the connection closes).
        conn.sock.replay = None
        conn.sock.drop_spool()
        if fs.cancelled() or fs.exception() is not None or fs.result():
            return super().finish_request(conn, fs)   # kept alive, or failed
        self.lingering.close(conn.sock.raw)

    def handle_error(self, req, client, addr, exc):
        if isinstance(exc, LimitRequestLine):
            error = request_head.line_too_long()
        elif isinstance(exc, LimitRequestHeaders) and "size" in str(exc):
            error = request_head.field_too_long()
        elif isinstance(exc, LimitRequestHeaders):
            error = request_head.too_many_fields()
        elif isinstance(exc, wire.ReadDeadlineExceeded):
            error = wire.request_timeout()
        else:
            return super().handle_error(req, client, addr, exc)
        self.log.info("Refused a request from ip=%s: %s %s", ip_of(addr), error.http_status,
                      error.code)
        try:
            util.write(client, raw_answer(error, getattr(client, "request_id", None)))
        except OSError:
            self.log.debug("Failed to send error message.")

