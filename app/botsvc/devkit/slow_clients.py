"""Slow clients that reconnect whenever they are cut, and a well-behaved
client timed beside them: the flood of tests/test_frontdoor.py and of
``scripts/bench frontdoor``.

Each slow client sends a request head (or all of it but the body) and then one
byte a second; when the server answers or cuts it, it connects again at once.
They come from their own loopback address (127.0.0.2 by default), as clients
of another machine would, so that per-client limits tell them apart.
"""
from __future__ import annotations

import contextlib
import select
import socket
import threading
import time
from collections.abc import Iterator

import requests

# Half send their head slowly (never finishing it), half their body.
SLOW_HEAD = b"POST /v2/getMe HTTP/1.1\r\nHost: x\r\nX-Slow: "
SLOW_BODY = (b"POST /v2/sendMessage HTTP/1.1\r\nHost: x\r\nContent-Type: application/json\r\n"
             b"Content-Length: 100000\r\n\r\n")


class Flood:
    def __init__(self, port: int, clients: int, source: str):
        self.port, self.source = port, source
        self.stopping = threading.Event()
        self.cuts = 0             # times a slow client was answered or cut
        self.threads = [threading.Thread(target=self._trickle, daemon=True,
                                         args=(SLOW_HEAD if i % 2 else SLOW_BODY,))
                        for i in range(clients)]

    def _trickle(self, head: bytes) -> None:
        while not self.stopping.is_set():
            try:
                with socket.create_connection(("127.0.0.1", self.port), timeout=5,
                                              source_address=(self.source, 0)) as sock:
                    sock.sendall(head)
                    while not self.stopping.is_set():
                        if select.select([sock], [], [], 1.0)[0]:
                            break   # answered or cut
                        sock.sendall(b"x")
            except OSError:
                time.sleep(0.05)   # refused or reset: connect again
            if not self.stopping.is_set():
                self.cuts += 1


@contextlib.contextmanager
def slow_client_flood(port: int, clients: int = 32, source: str = "127.0.0.2",
                      settle_seconds: float = 2.0) -> Iterator[Flood]:
    flood = Flood(port, clients, source)
    for thread in flood.threads:
        thread.start()
    time.sleep(settle_seconds)   # they hold what they can before the timed calls
    try:
        yield flood
    finally:
        flood.stopping.set()
        for thread in flood.threads:
            thread.join(timeout=10)


def timed_get_me(base_url: str, token: str, calls: int = 200, spacing: float = 0.1,
                 timeout: float = 5.0) -> list[float | None]:
    """``calls`` getMe, one every ``spacing`` seconds on one session; each
    one's seconds, or None when it failed or took longer than ``timeout``."""
    took: list[float | None] = []
    with requests.Session() as session:
        session.headers["Authorization"] = f"Bearer {token}"
        for _ in range(calls):
            started = time.monotonic()
            try:
                answer = session.post(f"{base_url}/v2/getMe", json={}, timeout=timeout)
                took.append(time.monotonic() - started if answer.status_code == 200 else None)
            except requests.RequestException:
                took.append(None)
            time.sleep(max(0.0, spacing - (time.monotonic() - started)))
    return took


def percentile(values: list[float], fraction: float) -> float:
    ordered = sorted(values)
    return ordered[min(len(ordered) - 1, int(len(ordered) * fraction))]
