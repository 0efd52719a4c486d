"""The hard deadline of a webhook attempt.

Socket timeouts alone restart on every byte a slow receiver trickles, so the
whole attempt (connect, TLS, sending, reading) ends at one deadline enforced
from outside: a watchdog thread shuts the attempt's socket down when its time
is up, whatever phase the attempt is blocked in.
"""
from __future__ import annotations

import heapq
import itertools
import os
import socket
import threading
import time


class _Watchdog:
    """One thread per process that expires the attempts' deadlines (a timer
    thread per attempt cost more than a delivery over a kept connection)."""

    def __init__(self):
        self._cond = threading.Condition()
        self._heap: list[tuple[float, int, Deadline]] = []
        self._order = itertools.count()
        threading.Thread(target=self._run, name="webhook-deadlines", daemon=True).start()

    def watch(self, deadline: Deadline) -> None:
        with self._cond:
            heapq.heappush(self._heap, (deadline.when, next(self._order), deadline))
            if self._heap[0][2] is deadline:
                self._cond.notify()

    def _run(self) -> None:
        while True:
            with self._cond:
                while not self._heap or self._heap[0][0] > time.monotonic():
                    self._cond.wait(self._heap[0][0] - time.monotonic() if self._heap else None)
                deadline = heapq.heappop(self._heap)[2]
            deadline.expire()


_watchdogs: dict[int, _Watchdog] = {}
_watchdogs_lock = threading.Lock()


def _watchdog() -> _Watchdog:
    """This process's watchdog (made after any fork: threads do not survive one)."""
    with _watchdogs_lock:
        watchdog = _watchdogs.get(os.getpid())
        if watchdog is None:
            _watchdogs.clear()
            watchdog = _watchdogs[os.getpid()] = _Watchdog()
        return watchdog


class Deadline:
    """Shuts the connection's socket down when time is up.

    It acts on the duplicate of the TCP socket that the connection keeps
    (``PinnedConnection.watch``): the original is detached when TLS wraps
    it, but shutdown() on any descriptor of a socket ends the connection for
    all of them."""

    def __init__(self, seconds: float):
        self.when = time.monotonic() + seconds
        self._lock = threading.Lock()
        self._sock: socket.socket | None = None
        self._finished = False
        self.expired = False
        _watchdog().watch(self)

    def attach(self, sock: socket.socket) -> None:
        with self._lock:
            self._sock = sock
            if self.expired:
                self._shutdown()

    def expire(self) -> None:
        with self._lock:
            if not self._finished:
                self.expired = True
                self._shutdown()

    def _shutdown(self) -> None:
        if self._sock is not None:
            try:
                self._sock.shutdown(socket.SHUT_RDWR)
            except OSError:
                pass

    def finish(self) -> None:
        with self._lock:
            self._finished = True
            self._sock = None
