"""Connections to webhook receivers kept open between deliveries.

A new TLS connection per delivery costs more than the delivery (two round
trips and a handshake on both sides: 214 deliveries/s for one bot, and only
1.5x that for eight bots together on two cores, where the handshakes used the
CPU). So a connection that ended its exchange cleanly is kept for the bot's
next delivery, under rules that keep every per-delivery guarantee:

- the name is still resolved again and every answer checked at each delivery
  (transport.py); a kept connection is used only when its pinned address is
  among the allowed answers of this delivery, to the same scheme, port, TLS
  host name and trust configuration (``Route``). Anything else closes it;
- one connection per bot and webhook configuration: the holder of the bot's
  lease takes it (``take``) and gives it back after the attempt (``give``),
  so two threads never share one; a new setWebhook/deleteWebhook (another
  ``generation``) closes it;
- it is closed after ``IDLE_SECONDS`` unused, and at most ``MAX_KEPT`` are
  kept per process (the least recently used goes first);
- a connection the receiver closed meanwhile is noticed before it is used
  (its socket reads as readable: EOF or stray bytes) and replaced.

New connections are opened here too (``open_pinned``): urllib3's connection
classes used directly, no pool manager and no ProxyManager, so
HTTPS_PROXY/HTTP_PROXY from the environment play no part (a proxy would
resolve the name again, out of our sight).
"""
from __future__ import annotations

import functools
import socket
import ssl
import threading
import time
from collections import OrderedDict
from dataclasses import dataclass

import certifi
from urllib3.connection import HTTPConnection, HTTPSConnection
from urllib3.util.ssl_ import create_urllib3_context

from botsvc.webhooks.deadlines import Deadline

# Receivers close idle connections themselves after 5 s (Node, uvicorn) to
# 75 s (nginx); a kept one that the receiver closed first is noticed and
# replaced, so this only bounds how long we hold sockets nobody uses.
IDLE_SECONDS = 30.0
MAX_KEPT = 128


@dataclass(frozen=True)
class Route:
    """Where a connection goes and what it trusts; equal routes may share one."""
    scheme: str
    address: str          # the pinned IP address, as text
    port: int
    tls_host: str | None  # the name the certificate is verified for (https only)
    trust: tuple[str | None, str | None]   # (CA file, extra CA PEM text)


class PinnedConnection:
    """A urllib3 connection to one checked address, with a duplicate of its
    TCP socket that the attempt's deadline shuts down (transport.py)."""

    def __init__(self, route: Route, conn: HTTPConnection):
        self.route = route
        self.conn = conn
        self.watch: socket.socket | None = None   # the duplicate, set at connect
        self.last_used = time.monotonic()
        self.exchanges = 0

    def usable(self, now: float) -> bool:
        """Idle for less than IDLE_SECONDS and not closed by the receiver."""
        return (now - self.last_used < IDLE_SECONDS and self.conn.sock is not None
                and self.conn.is_connected)

    def close(self) -> None:
        try:
            self.conn.close()
        finally:
            if self.watch is not None:
                self.watch.close()
                self.watch = None


class KeptConnections:
    """This process's kept connections, one per bot."""

    def __init__(self, max_kept: int = MAX_KEPT):
        self.max_kept = max_kept
        self._lock = threading.Lock()
        self._kept: OrderedDict[int, tuple[int, PinnedConnection]] = OrderedDict()

    def take(self, bot_id: int, generation: int) -> PinnedConnection | None:
        """The bot's kept connection for this configuration, now the caller's
        alone; one of an older configuration is closed."""
        with self._lock:
            entry = self._kept.pop(bot_id, None)
        if entry is None:
            return None
        kept_generation, connection = entry
        if kept_generation != generation:
            connection.close()
            return None
        return connection

    def give(self, bot_id: int, generation: int, connection: PinnedConnection | None) -> None:
        """Keep ``connection`` (None: nothing to keep) for the bot's next delivery."""
        if connection is None:
            return
        evicted: list[PinnedConnection] = []
        with self._lock:
            previous = self._kept.pop(bot_id, None)
            if previous is not None:
                evicted.append(previous[1])
            self._kept[bot_id] = (generation, connection)
            while len(self._kept) > self.max_kept:
                evicted.append(self._kept.popitem(last=False)[1][1])
        for old in evicted:
            old.close()

    def close_idle(self, now: float | None = None) -> int:
        """Close the connections unused for IDLE_SECONDS; returns how many."""
        now = time.monotonic() if now is None else now
        with self._lock:
            idle = [bot_id for bot_id, (_, c) in self._kept.items()
                    if now - c.last_used >= IDLE_SECONDS]
            closing = [self._kept.pop(bot_id)[1] for bot_id in idle]
        for connection in closing:
            connection.close()
        return len(closing)

    def close_all(self) -> None:
        with self._lock:
            closing = [c for _, c in self._kept.values()]
            self._kept.clear()
        for connection in closing:
            connection.close()

    def __len__(self) -> int:
        with self._lock:
            return len(self._kept)


class _WatchedMixin:
    """Hands the new TCP socket's duplicate to the attempt's deadline."""
    pinned: PinnedConnection
    deadline: Deadline

    def _new_conn(self) -> socket.socket:
        sock = super()._new_conn()  # type: ignore[misc]
        self.pinned.watch = sock.dup()
        self.deadline.attach(self.pinned.watch)
        return sock


class _PinnedHTTPSConnection(_WatchedMixin, HTTPSConnection):
    pass


class _PinnedHTTPConnection(_WatchedMixin, HTTPConnection):
    pass


@functools.lru_cache(maxsize=8)
def _tls_context(ca_certs: str, extra_ca_data: str | None) -> ssl.SSLContext:
    """One context per trust configuration, shared by all attempts: parsing
    certifi's bundle costs tens of milliseconds, more than the rest of an
    attempt to a nearby receiver. Verification stays on: urllib3 matches the
    certificate against ``assert_hostname`` (the name, not the pinned IP)."""
    context = create_urllib3_context(cert_reqs=ssl.CERT_REQUIRED)
    context.check_hostname = False   # urllib3 does it, for the name we pinned
    context.load_verify_locations(cafile=ca_certs, cadata=extra_ca_data)
    return context


def open_pinned(route: Route, seconds: float) -> PinnedConnection:
    """A new, not yet connected connection to ``route`` (it connects in the
    attempt's exchange, under the attempt's deadline)."""
    if route.scheme == "https":
        ca_certs, extra_ca_data = route.trust
        conn: HTTPConnection = _PinnedHTTPSConnection(
            host=route.address,
            port=route.port,
            timeout=seconds,
            server_hostname=route.tls_host,
            assert_hostname=route.tls_host,
            cert_reqs="CERT_REQUIRED",
            # extra_ca_data is trusted beside ca_certs, not instead
            ssl_context=_tls_context(ca_certs or certifi.where(), extra_ca_data),
        )
    else:
        conn = _PinnedHTTPConnection(host=route.address, port=route.port, timeout=seconds)
    pinned = PinnedConnection(route, conn)
    conn.pinned = pinned
    return pinned
