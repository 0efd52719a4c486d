"""The sockets under botsvc's gunicorn worker (app/botsvc/gunicorn_worker.py): a
connection's socket whose reads keep the request's deadline and serve first
what the worker's main loop already read (``DeadlineSocket``), and the
connections being closed without a thread (``Lingering``)."""
from __future__ import annotations

import contextlib
import fcntl
import selectors
import socket
import termios
import time

from botsvc.connection import wire

BODY_GRACE_SECONDS = 10.0
BODY_MIN_RATE = 500            # bytes a second, as Apache's mod_reqtimeout
BODY_MAX_SECONDS = 900.0       # as gunicorn's timeout: a long upload on a slow link
# As nginx's lingering close (5 s between reads, 30 s in all), shorter: only
# a front door sends fast enough to need it, and it sends at most the upload
# ceiling (100 MiB) and a multipart's framing.
LINGER_IDLE_SECONDS = 2.0
LINGER_MAX_SECONDS = 10.0
LINGER_MAX_BYTES = 128 * 1024 * 1024
RECV_BYTES = 65536


def body_deadline(started: float, received: int) -> float:
    """When a request begun at ``started`` with ``received`` bytes of body
    must be whole: within BODY_GRACE_SECONDS, then at BODY_MIN_RATE."""
    return started + min(BODY_MAX_SECONDS, BODY_GRACE_SECONDS + received / BODY_MIN_RATE)


def waiting_bytes(sock: socket.socket) -> int:
    """Bytes that have arrived on ``sock`` and are not read yet."""
    try:
        return int.from_bytes(fcntl.ioctl(sock.fileno(), termios.FIONREAD, b"\0\0\0\0"),
                              "little")
    except OSError:
        return 0


class DeadlineSocket:
    """The connection's socket, whose reads keep the current request's
    deadline while a thread serves it (the rest of what gunicorn does with it
    passes through). ``head`` carries what the main loop read (the head and
    what followed it) to the thread's parser; ``spool``, a body the main loop
    read past that, is read before the socket. While ``replay`` is a
    bytearray, every byte read is kept in it, so that a request the app
    parked (app/botsvc/connection/body.py) can be parsed again from its first byte."""

    def __init__(self, sock: socket.socket):
        self.raw = sock
        self.head: bytearray | None = None
        self.request_id: str | None = None
        self.spool = None
        self.replay: bytearray | None = None
        self.declared = None        # what the head says of the body (body.Declared)
        self.head_end = 0           # where the body starts in ``head``
        self.body_length = 0        # declared; what of it came with ``head``: body_in_head
        self.body_in_head = 0
        self.chunked_whole = False  # a chunked body, whole in ``head`` or ``spool``
        self.holding = None         # a body admitted to park: its share of the spool
        self.head_length = 0        # of ``head``, when ``replay`` began
        self._phase = None          # None: free reads; "request": the deadline; "arrived"
        self._started = self._received = 0.0

    def __getattr__(self, name):
        return getattr(self.raw, name)

    def start(self) -> float:
        """A request begins (its clock starts); returns when."""
        self._started, self._received = time.monotonic(), 0
        return self._started

    @property
    def started(self) -> float:
        return self._started

    def reading(self) -> None:
        self._phase = "request"

    def stop(self) -> None:
        self._phase = None

    @property
    def body_pending(self) -> bool:
        """Whether the body had not all arrived with the head."""
        if self.declared is not None and self.declared.chunked:
            return not self.chunked_whole
        return self.body_length > self.body_in_head

    def body_arrived(self) -> bool:
        """Whether the whole body has arrived (read or waiting)."""
        if self.spool is not None:
            return True                     # the main loop read it whole
        if self.declared is not None and self.declared.chunked:
            return self.chunked_whole       # its end is not known before it is read
        have = self.body_in_head + self._received + waiting_bytes(self.raw)
        return have >= self.body_length

    def drop_spool(self) -> None:
        if self.spool is not None:
            self.spool.close()
            self.spool = None

    @contextlib.contextmanager
    def arrived_only(self):
        """Reads take what has already arrived, and raise wire.NotArrived
        rather than wait."""
        previous, self._phase = self._phase, "arrived"
        try:
            yield
        finally:
            self._phase = previous

    def recv(self, size: int, flags: int = 0) -> bytes:
        if self.spool is not None:
            data = self.spool.read(size)
            if data:
                return self._kept(data)
            self.drop_spool()
        if self._phase is None:
            return self._kept(self.raw.recv(size, flags))
        try:
            data = self.raw.recv(size, flags | socket.MSG_DONTWAIT)
        except BlockingIOError:
            if self._phase == "arrived":
                raise wire.NotArrived() from None
            # The clock of the head: a request that waited for a thread was already late.
            remaining = body_deadline(self._started, self._received) - time.monotonic()
            if not select_readable(self.raw, remaining):
                raise wire.ReadDeadlineExceeded() from None
            data = self.raw.recv(size, flags)
        self._received += len(data)
        return self._kept(data)

    def _kept(self, data: bytes) -> bytes:
        if self.replay is not None:
            self.replay += data
        return data


def select_readable(sock: socket.socket, seconds: float) -> bool:
    if seconds <= 0:
        return False
    with selectors.PollSelector() as waiting:
        waiting.register(sock, selectors.EVENT_READ)
        return bool(waiting.select(seconds))


class Lingering:
    """Connections being closed by the main loop: FIN sent, what the client
    still sends read and dropped until it closes, sends nothing for
    LINGER_IDLE_SECONDS, or LINGER_MAX_SECONDS or LINGER_MAX_BYTES are
    reached. A client (or a front door) still sending a body botsvc refused
    reads its answer whole rather than a reset (nginx would answer 502 for
    it). Until then the connection counts among the worker's (``on_closed``
    when it is gone), so a flood of them stops the worker accepting, as open
    ones do."""

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
            _close(sock)
            self.on_closed()
            return
        now = time.monotonic()
        self.sockets[sock] = [now + LINGER_IDLE_SECONDS, now + LINGER_MAX_SECONDS,
                              LINGER_MAX_BYTES]

    def _readable(self, sock: socket.socket) -> None:
        try:
            data = sock.recv(RECV_BYTES)
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
        _close(sock)
        self.on_closed()


def _close(sock: socket.socket) -> None:
    with contextlib.suppress(OSError):
        sock.close()
