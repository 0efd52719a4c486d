"""One webhook delivery attempt over a pinned, verified connection.

Per attempt:
- the stored URL is parsed again and its name resolved again; every answer
  must pass the address rule, otherwise nothing is contacted (a name that
  answered 93.184.216.34 at setWebhook and 127.0.0.1 now is refused);
- the TCP connection goes to one of those checked addresses, while TLS still
  verifies the certificate for the host name (SNI and hostname check use the
  name, the socket uses the address), so there is no second lookup anywhere;
- urllib3's connection classes are used directly: no pool manager, no
  ProxyManager, so HTTPS_PROXY/HTTP_PROXY from the environment play no part
  (a proxy would resolve the name again, out of our sight);
- no redirect is ever followed: a 3xx is a failure like any non-2xx;
- the whole attempt (connect, TLS, sending, reading) ends at a hard deadline
  (10 s by default), enforced by a watchdog that shuts the socket down, since
  socket timeouts alone restart on every byte a slow server trickles;
- at most MAX_RESPONSE_BYTES of the answer are read, then it is dropped;
- a connection that ended its exchange cleanly may be kept for the bot's
  next delivery (connections.py says when it is used again); a kept
  connection the receiver turns out to have closed, before any answer came,
  is replaced by a new one within the same attempt and deadline.

The secret token goes only into the X-Platform-Bot-Secret-Token header; it
never appears in DeliveryResult.error or in a log line. This module logs
nothing itself: the caller records DeliveryResult.error as last_error.
"""
from __future__ import annotations

import functools
import heapq
import itertools
import os
import socket
import ssl
import threading
import time
from dataclasses import dataclass
from http.client import HTTPException, HTTPResponse, RemoteDisconnected

import certifi
from urllib3.connection import HTTPConnection, HTTPSConnection
from urllib3.exceptions import ConnectTimeoutError, HTTPError, NewConnectionError
from urllib3.util.ssl_ import create_urllib3_context
from urllib3.util.ssl_match_hostname import CertificateError

from botsvc.errors import ApiError
from botsvc.webhooks.addresses import (
    IPAddress,
    Resolver,
    TargetRejected,
    default_resolver,
    is_allowed_address,
    resolve_allowed,
)
from botsvc.webhooks.connections import PinnedConnection, Route
from botsvc.webhooks.secret_token import SECRET_HEADER, is_valid_secret_token
from botsvc.webhooks.urls import WebhookTarget, parse_webhook_url

DEFAULT_TIMEOUT = 10.0
MAX_RESPONSE_BYTES = 64 * 1024
USER_AGENT = "botsvc-webhook/1"


@dataclass(frozen=True)
class DeliveryResult:
    ok: bool
    status: int | None = None   # the receiver's HTTP status, when one arrived
    error: str | None = None    # short text safe to show the bot owner


class _Watchdog:
    """One thread per process that expires the attempts' deadlines (a timer
    thread per attempt cost more than a delivery over a kept connection)."""

    def __init__(self):
        self._cond = threading.Condition()
        self._heap: list[tuple[float, int, _Deadline]] = []
        self._order = itertools.count()
        threading.Thread(target=self._run, name="webhook-deadlines", daemon=True).start()

    def watch(self, deadline: _Deadline) -> None:
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


class _Deadline:
    """Shuts the connection's socket down when time is up, whatever phase
    (TLS handshake, sending, waiting, reading) the attempt is blocked in.

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


class _WatchedMixin:
    pinned: PinnedConnection
    deadline: _Deadline

    def _new_conn(self) -> socket.socket:
        sock = super()._new_conn()  # type: ignore[misc]
        self.pinned.watch = sock.dup()
        self.deadline.attach(self.pinned.watch)
        return sock


class _PinnedHTTPSConnection(_WatchedMixin, HTTPSConnection):
    pass


class _PinnedHTTPConnection(_WatchedMixin, HTTPConnection):
    pass


class _ConnectFailed(Exception):
    """TCP connect to one address failed; the next address may be tried."""


class _Stale(Exception):
    """A kept connection turned out closed before any answer; use a new one."""


# What a kept connection the receiver closed meanwhile raises when it is used.
_STALE_ERRORS = (RemoteDisconnected, ConnectionResetError, BrokenPipeError, ssl.SSLEOFError,
                 ssl.SSLZeroReturnError)


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


def _open(route: Route, seconds: float) -> PinnedConnection:
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


def _status_result(status: int) -> DeliveryResult:
    if 200 <= status < 300:
        return DeliveryResult(True, status, None)
    if 300 <= status < 400:
        return DeliveryResult(False, status, f"redirect not followed (HTTP {status})")
    return DeliveryResult(False, status, f"HTTP {status}")


def _request_bytes(target: WebhookTarget, headers: dict[str, str], body: bytes) -> bytes:
    """The whole request in one buffer, sent in one TLS record: http.client
    sends the head and the body apart, which costs both sides a second
    record and system call. Every part is ASCII already checked (the URL's
    path and host by ``parse_webhook_url``, the secret by its pattern)."""
    lines = [f"POST {target.request_target} HTTP/1.1", "Accept-Encoding: identity",
             *(f"{name}: {value}" for name, value in headers.items()),
             f"Content-Length: {len(body)}", "", ""]
    return "\r\n".join(lines).encode("ascii") + body


def _exchange(pinned: PinnedConnection, target: WebhookTarget, request: bytes,
              seconds: float, timeout: float) -> tuple[DeliveryResult, bool]:
    """One request and its answer on ``pinned`` (connecting it first when it
    is new); returns the result and whether the connection may be kept.
    urllib3 makes the verified connection; the exchange itself writes the
    request and reads the answer with http.client's parser on the socket."""
    deadline = _Deadline(seconds)
    conn = pinned.conn
    conn.deadline = deadline
    conn.timeout = seconds
    reused = conn.sock is not None
    where = f"{target.host}:{target.port}"
    response: HTTPResponse | None = None
    try:
        if reused:
            deadline.attach(pinned.watch)
        else:
            try:
                conn.connect()
            except (NewConnectionError, ConnectTimeoutError) as e:
                if deadline.expired or isinstance(e.__cause__, TimeoutError):
                    raise _ConnectFailed(f"could not connect to {where}: timed out") from None
                reason = getattr(e.__cause__, "strerror", None) or "connection failed"
                raise _ConnectFailed(f"could not connect to {where}: {reason.lower()}") from None
        conn.sock.settimeout(seconds)
        conn.sock.sendall(request)
        response = HTTPResponse(conn.sock, method="POST")
        response.begin()
    except (ssl.SSLCertVerificationError, CertificateError):
        return DeliveryResult(False, None, f"TLS certificate verification failed for {target.host}"), False
    except (OSError, HTTPException, HTTPError) as e:
        if deadline.expired:
            return DeliveryResult(False, None, f"no response within {timeout:g} s"), False
        if reused and isinstance(e, _STALE_ERRORS):
            raise _Stale from None
        if isinstance(e, ssl.SSLError):
            return DeliveryResult(False, None, f"TLS handshake with {target.host} failed"), False
        if isinstance(e, TimeoutError):
            return DeliveryResult(False, None, f"no response within {timeout:g} s"), False
        return DeliveryResult(False, None, "the connection closed before a complete response"), False
    else:
        if deadline.expired:
            # http.client takes the EOF our shutdown causes as the end of the
            # headers, so a status line that arrived in time must not count
            # when the rest of the head did not.
            return DeliveryResult(False, None, f"no response within {timeout:g} s"), False
        status = response.status
        try:
            # Only the status matters; read a bounded amount, undecoded (no
            # decompression bomb), and stop at the deadline.
            response.read(MAX_RESPONSE_BYTES)
        except (OSError, HTTPException):
            return _status_result(status), False
        # Kept only when the answer was read to its end in time and neither
        # side asked to close (Connection: close, or an HTTP/1.0 answer).
        keep = response.isclosed() and not response.will_close and not deadline.expired
        return _status_result(status), keep
    finally:
        if response is not None:
            response.close()
        deadline.finish()
        pinned.last_used = time.monotonic()
        pinned.exchanges += 1


def deliver(
    url: str,
    body: bytes,
    secret_token: str,
    *,
    allow_private: bool,
    resolve: Resolver = default_resolver,
    timeout: float = DEFAULT_TIMEOUT,
    ca_certs: str | None = None,
    extra_ca_data: str | None = None,
) -> DeliveryResult:
    """POST ``body`` (the Update JSON) to ``url`` once over a new connection,
    closed afterwards. Only a 2xx is ok.

    ``ca_certs`` (a file) defaults to certifi's bundle; tests pass their own
    CA. ``extra_ca_data`` (PEM text) is trusted in addition to it: the
    BOTSVC_WEBHOOK_CA_BUNDLE setting, for receivers with a private CA."""
    result, kept = deliver_kept(url, body, secret_token, allow_private=allow_private,
                                resolve=resolve, timeout=timeout, ca_certs=ca_certs,
                                extra_ca_data=extra_ca_data, kept=None)
    if kept is not None:
        kept.close()
    return result


@functools.lru_cache(maxsize=1024)
def _parsed(url: str, allow_private: bool) -> WebhookTarget:
    """The stored URL parsed again: a pure function of its text and the
    setting, so the answer is remembered (IDNA and the checks cost a sixth of
    a delivery over a kept connection). A refused URL is not remembered."""
    return parse_webhook_url(url, allow_private=allow_private)


def _checked_addresses(target: WebhookTarget, allow_private: bool,
                       resolve: Resolver) -> list[IPAddress]:
    """The addresses this attempt may use, every one of them allowed."""
    if target.literal is None:
        return resolve_allowed(target.host, target.port, allow_private=allow_private,
                               resolve=resolve)
    if is_allowed_address(target.literal, allow_private=allow_private):
        return [target.literal]
    raise TargetRejected("non_public_address", "the webhook address may not be used")


def deliver_kept(
    url: str,
    body: bytes,
    secret_token: str,
    *,
    allow_private: bool,
    resolve: Resolver = default_resolver,
    timeout: float = DEFAULT_TIMEOUT,
    ca_certs: str | None = None,
    extra_ca_data: str | None = None,
    kept: PinnedConnection | None,
) -> tuple[DeliveryResult, PinnedConnection | None]:
    """``deliver`` that may use ``kept`` (the bot's connection from its last
    delivery, now the caller's) and returns the connection to keep for the
    next one, or None. ``kept`` is used only when its route is one this
    attempt's checks allow; otherwise, or when it fails, it is closed."""
    started = time.monotonic()
    try:
        if not is_valid_secret_token(secret_token):
            return DeliveryResult(False, None, "the webhook secret_token is not valid"), None
        try:
            target = _parsed(url, allow_private)
        except ApiError as e:
            return DeliveryResult(False, None, f"the webhook URL is not valid: {e.description}"), None
        try:
            addresses = _checked_addresses(target, allow_private, resolve)
        except TargetRejected as e:
            return DeliveryResult(False, None, e.message), None
        trust = (ca_certs, extra_ca_data)
        tls_host = target.host if target.scheme == "https" else None
        routes = [Route(target.scheme, str(ip), target.port, tls_host, trust) for ip in addresses]
        request = _request_bytes(target, {
            "Host": target.host_header,
            "Content-Type": "application/json",
            "User-Agent": USER_AGENT,
            SECRET_HEADER: secret_token,
        }, body)
        if kept is not None and kept.route in routes and kept.usable(time.monotonic()):
            reuse, kept = kept, None
            remaining = timeout - (time.monotonic() - started)
            try:
                result, keep = _exchange(reuse, target, request, remaining, timeout)
                return result, _kept_or_closed(reuse, keep)
            except _Stale:
                reuse.close()
        error = f"could not connect to {target.host}:{target.port}"
        for route in routes:  # next address only when the TCP connect itself failed
            remaining = timeout - (time.monotonic() - started)
            if remaining <= 0:
                return DeliveryResult(False, None, f"no response within {timeout:g} s"), None
            pinned = _open(route, remaining)
            try:
                result, keep = _exchange(pinned, target, request, remaining, timeout)
            except _ConnectFailed as e:
                pinned.close()
                error = str(e)
                continue
            return result, _kept_or_closed(pinned, keep)
        return DeliveryResult(False, None, error), None
    finally:
        if kept is not None:   # not usable for this attempt
            kept.close()


def _kept_or_closed(pinned: PinnedConnection, keep: bool) -> PinnedConnection | None:
    if keep:
        return pinned
    pinned.close()
    return None
