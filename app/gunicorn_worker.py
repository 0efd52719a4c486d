"""botsvc's gunicorn worker: gthread, plus what its connections need
(docs/connection.md).

- A request head is read by the worker's main loop, which holds no thread:
  a connection is handed to a thread only once its head has arrived whole
  within the limits of app/connection/request_head.py, and gunicorn's parser gets that
  head in one piece (it copies its buffer on every read, which made a long
  head cost time in the square of its length). A head past a limit is
  answered 414/431, one not whole within HEAD_SECONDS 408, in the contract's
  envelope, and nothing more of it is read. Bytes already waiting on the
  connection are always taken before a deadline is called: a request that
  waited for a busy worker is not the client's fault.
- The rest of a request is read by its thread with a deadline: within
  BODY_GRACE_SECONDS, then at BODY_MIN_RATE bytes a second, within
  BODY_MAX_SECONDS; a client too slow gets 408 REQUEST_TIMEOUT.
- The app can close the connection for real (app/connection/wire.py): gunicorn drops a
  ``Connection: close`` header the app sets, so the request being served is
  handed to the app through a thread-local, where ``close_connection`` sets
  gunicorn's own flag; and the app can read what has already arrived without
  waiting for more (``arrived_only``).
- Closing never waits: the answer is followed by a FIN, and what the client
  still sends (the body of a request refused before it was read) is read and
  dropped by the main loop for a few seconds (``Lingering``), so that the
  client reads its answer rather than a reset; gthread's own graceful close
  blocked the main loop for up to 2 s a connection.
"""
from __future__ import annotations

import contextlib
import selectors
import socket
import time
from functools import partial

from gunicorn import util
from gunicorn.http.errors import LimitRequestHeaders, LimitRequestLine
from gunicorn.workers.gthread import ThreadWorker

from botsvc.connection import request_head, wire
from botsvc.errors import ApiError
from botsvc.jsontext import dumps
from botsvc.logs import HEADER as REQUEST_ID_HEADER
from botsvc.logs import request_id_for

HEAD_SECONDS = 10.0
BODY_GRACE_SECONDS = 10.0
BODY_MIN_RATE = 500            # bytes a second, as Apache's mod_reqtimeout
BODY_MAX_SECONDS = 900.0       # as gunicorn's timeout: a long upload on a slow link
# As nginx's lingering close (5 s between reads, 30 s in all), shorter: only
# a front door sends fast enough to need it, and it sends at most the upload
# ceiling (100 MiB) and a multipart's framing.
LINGER_IDLE_SECONDS = 2.0
LINGER_MAX_SECONDS = 10.0
LINGER_MAX_BYTES = 128 * 1024 * 1024
_RECV_BYTES = 65536

_REASONS = {408: "Request Timeout", 414: "URI Too Long", 431: "Request Header Fields Too Large"}


def raw_answer(error: ApiError, presented_id: str | None = None) -> bytes:
    """A whole HTTP/1.1 answer in the envelope, for when no request reached
    the app; the connection closes after it. It carries the request's own
    X-Request-Id when one had arrived, as every answer does (app/logs.py)."""
    body = dumps(error.body()).encode()
    status = error.http_status
    head = (f"HTTP/1.1 {status} {_REASONS[status]}\r\n"
            "Content-Type: application/json\r\n"
            f"Content-Length: {len(body)}\r\n"
            f"{REQUEST_ID_HEADER}: {request_id_for(presented_id)}\r\n"
            "Connection: close\r\n\r\n")
    return head.encode("latin-1") + body


class DeadlineSocket:
    """The connection's socket, whose reads keep the current request's
    deadline while a thread serves it (the rest of what gunicorn does with it
    passes through). ``head`` carries the head the main loop read to the
    thread's parser."""

    def __init__(self, sock: socket.socket):
        self.raw = sock
        self.head: bytearray | None = None
        self.request_id: str | None = None
        self._phase = None          # None: free reads; "request": the deadline; "arrived"
        self._started = self._received = 0.0

    def __getattr__(self, name):
        return getattr(self.raw, name)

    def start(self) -> float:
        """A request begins (its clock starts); returns when."""
        self._started, self._received = time.monotonic(), 0
        return self._started

    def reading(self) -> None:
        self._phase = "request"

    def stop(self) -> None:
        self._phase = None

    @contextlib.contextmanager
    def arrived_only(self):
        """Reads take what has already arrived, and raise wire.NotArrived
        rather than wait."""
        previous, self._phase = self._phase, "arrived"
        try:
            yield
        finally:
            self._phase = previous

    def _deadline(self) -> float:
        # The clock of the head: a request that waited for a thread was already late.
        return self._started + min(BODY_MAX_SECONDS,
                                   BODY_GRACE_SECONDS + self._received / BODY_MIN_RATE)

    def recv(self, size: int, flags: int = 0) -> bytes:
        if self._phase is None:
            return self.raw.recv(size, flags)
        try:
            data = self.raw.recv(size, flags | socket.MSG_DONTWAIT)
        except BlockingIOError:
            if self._phase == "arrived":
                raise wire.NotArrived() from None
            remaining = self._deadline() - time.monotonic()
            ready = select_readable(self.raw, remaining)
            if not ready:
                raise wire.ReadDeadlineExceeded() from None
            data = self.raw.recv(size, flags)
        self._received += len(data)
        return data


def select_readable(sock: socket.socket, seconds: float) -> bool:
    if seconds <= 0:
        return False
    with selectors.PollSelector() as waiting:
        waiting.register(sock, selectors.EVENT_READ)
        return bool(waiting.select(seconds))


class ArrivingHead:
    """A connection whose request head is on its way (read by the main loop)."""

    __slots__ = ("conn", "scanner", "deadline", "waiting")

    def __init__(self, conn, deadline: float):
        self.conn = conn
        self.scanner = request_head.HeadScanner()
        self.deadline = deadline
        self.waiting = False        # registered with the poller


class Lingering:
    """Connections being closed by the main loop: FIN sent, what the client
    still sends read and dropped until it closes, sends nothing for
    LINGER_IDLE_SECONDS, or LINGER_MAX_SECONDS or LINGER_MAX_BYTES are
    reached. A front door sending a body botsvc refused reads its answer
    rather than a reset (nginx would answer 502 for it). Until then the
    connection counts among the worker's (``on_closed`` when it is gone), so a
    flood of them stops the worker accepting, as open ones do."""

    def __init__(self, poller: selectors.BaseSelector, on_closed):
        self.poller = poller
        self.on_closed = on_closed
        self.sockets: dict[socket.socket, list] = {}   # [idle deadline, last deadline, bytes left]

    def close(self, sock: socket.socket) -> None:
        try:
            sock.shutdown(socket.SHUT_WR)
            sock.setblocking(False)
            self.poller.register(sock, selectors.EVENT_READ, self._readable)
        except (OSError, ValueError, KeyError):
            util.close(sock)
            self.on_closed()
            return
        now = time.monotonic()
        self.sockets[sock] = [now + LINGER_IDLE_SECONDS, now + LINGER_MAX_SECONDS,
                              LINGER_MAX_BYTES]

    def _readable(self, sock: socket.socket) -> None:
        try:
            data = sock.recv(_RECV_BYTES)
        except BlockingIOError:
            return
        except OSError:
            data = b""
        state = self.sockets[sock]
        state[0] = time.monotonic() + LINGER_IDLE_SECONDS
        state[2] -= len(data)
        if not data or state[2] <= 0:
            self._close(sock)

    def sweep(self, force: bool = False) -> None:
        now = time.monotonic()
        for sock, (idle, last, _) in list(self.sockets.items()):
            if force or min(idle, last) <= now:
                self._close(sock)

    def _close(self, sock: socket.socket) -> None:
        del self.sockets[sock]
        with contextlib.suppress(OSError, ValueError, KeyError):
            self.poller.unregister(sock)
        util.close(sock)
        self.on_closed()


class BotsvcWorker(ThreadWorker):
    @classmethod
    def check_config(cls, cfg, log):
        super().check_config(cfg, log)
        if cfg.is_ssl:
            # The head is read off the raw socket by the main loop.
            raise RuntimeError("botsvc's gunicorn serves plain HTTP on loopback: TLS is the "
                               "reverse proxy's (docs/production.md)")

    def init_process(self):
        self.arriving: dict = {}     # conn -> ArrivingHead, oldest first
        super().init_process()       # makes the poller, then runs the loop

    def run(self):
        self.lingering = Lingering(self.poller, self._closed)
        super().run()

    # -- the head, in the main loop ---------------------------------------------------

    def enqueue_req(self, conn):
        """gthread calls this when a connection has a request to serve: a new
        one, a kept-alive one become readable, one with bytes read ahead."""
        if not isinstance(conn.sock, DeadlineSocket):
            conn.sock = DeadlineSocket(conn.sock)
        started = conn.sock.start()
        if conn.sock.raw.getblocking():   # after a thread, with bytes read ahead
            conn.sock.raw.setblocking(False)
        arriving = ArrivingHead(conn, started + HEAD_SECONDS)
        ahead = conn.parser.unreader.take_buffered() if conn.parser is not None else b""
        self._read_head(arriving, ahead)

    def _read_head(self, arriving: ArrivingHead, data: bytes = b"", *,
                   last_call: bool = False) -> None:
        sock = arriving.conn.sock.raw
        scanner = arriving.scanner
        try:
            complete = scanner.feed(data) if data else False
            while not complete:
                data = sock.recv(_RECV_BYTES)
                if not data:
                    return self._drop(arriving)     # the client went away
                complete = scanner.feed(data)
        except BlockingIOError:
            if last_call:
                return self._refuse(arriving, wire.request_timeout())
            return self._wait(arriving)
        except ApiError as refused:
            return self._refuse(arriving, refused)
        except OSError:
            return self._drop(arriving)
        self._stop_waiting(arriving)
        conn = arriving.conn
        conn.sock.head = scanner.data
        conn.sock.request_id = scanner.request_id
        super().enqueue_req(conn)

    def _wait(self, arriving: ArrivingHead) -> None:
        if not arriving.waiting:
            self.poller.register(arriving.conn.sock.raw, selectors.EVENT_READ,
                                 partial(self._head_readable, arriving))
            arriving.waiting = True
            self.arriving[arriving.conn] = arriving

    def _head_readable(self, arriving: ArrivingHead, _sock) -> None:
        self._read_head(arriving)

    def _stop_waiting(self, arriving: ArrivingHead) -> None:
        if arriving.waiting:
            arriving.waiting = False
            del self.arriving[arriving.conn]
            with contextlib.suppress(OSError, ValueError, KeyError):
                self.poller.unregister(arriving.conn.sock.raw)

    def _refuse(self, arriving: ArrivingHead, error: ApiError) -> None:
        self._stop_waiting(arriving)
        sock = arriving.conn.sock.raw
        self.log.info("Refused a request from ip=%s: %s %s", _ip(arriving.conn.client),
                      error.http_status, error.code)
        with contextlib.suppress(OSError):
            sock.send(raw_answer(error, arriving.scanner.request_id))   # a few hundred bytes
        self.lingering.close(sock)

    def _drop(self, arriving: ArrivingHead) -> None:
        self._stop_waiting(arriving)
        util.close(arriving.conn.sock.raw)
        self._closed()

    def _closed(self) -> None:
        self.nr_conns -= 1

    def murder_keepalived(self, force=False):
        # Called by gthread's loop at least once a second: the other deadlines too.
        super().murder_keepalived(force)
        now = time.monotonic()
        while self.arriving:
            arriving = next(iter(self.arriving.values()))
            if force:
                self._drop(arriving)
            elif arriving.deadline <= now:
                self._read_head(arriving, last_call=True)
            else:
                break
        self.lingering.sweep(force)

    # -- the rest, in a thread -----------------------------------------------------------

    def handle(self, conn):
        sock = conn.sock
        sock.reading()
        try:
            if sock.head is not None:
                conn.init()          # the parser (blocking), which reads the head first
                conn.parser.unreader.unread(sock.head)
                sock.head = None
            return super().handle(conn)
        finally:
            sock.stop()   # gunicorn's own drain reads freely

    def handle_request(self, req, conn):
        wire.current.request = req
        wire.current.arrived_only = conn.sock.arrived_only
        try:
            return super().handle_request(req, conn)
        finally:
            wire.current.request = wire.current.arrived_only = None
            conn.sock.stop()

    def finish_request(self, conn, fs):
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
        self.log.info("Refused a request from ip=%s: %s %s", _ip(addr), error.http_status,
                      error.code)
        try:
            util.write(client, raw_answer(error, getattr(client, "request_id", None)))
        except OSError:
            self.log.debug("Failed to send error message.")


def _ip(addr) -> str:
    return addr[0] if isinstance(addr, tuple) and addr else ""
