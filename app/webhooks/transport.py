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
- at most MAX_RESPONSE_BYTES of the answer are read, then it is dropped.

The secret token goes only into the X-Platform-Bot-Secret-Token header; it
never appears in DeliveryResult.error or in a log line. This module logs
nothing itself: the caller records DeliveryResult.error as last_error.
"""
from __future__ import annotations

import functools
import socket
import ssl
import threading
import time
from dataclasses import dataclass
from http.client import HTTPException

import certifi
from urllib3.connection import HTTPConnection, HTTPSConnection
from urllib3.exceptions import ConnectTimeoutError, HTTPError, NewConnectionError
from urllib3.util.ssl_ import create_urllib3_context
from urllib3.util.ssl_match_hostname import CertificateError

from app.errors import ApiError
from app.webhooks.addresses import (
    IPAddress,
    Resolver,
    TargetRejected,
    default_resolver,
    is_allowed_address,
    resolve_allowed,
)
from app.webhooks.secret_token import SECRET_HEADER, is_valid_secret_token
from app.webhooks.urls import WebhookTarget, parse_webhook_url

DEFAULT_TIMEOUT = 10.0
MAX_RESPONSE_BYTES = 64 * 1024
USER_AGENT = "botsvc-webhook/1"


@dataclass(frozen=True)
class DeliveryResult:
    ok: bool
    status: int | None = None   # the receiver's HTTP status, when one arrived
    error: str | None = None    # short text safe to show the bot owner


class _Deadline:
    """Shuts the connection's socket down when time is up, whatever phase
    (TLS handshake, sending, waiting, reading) the attempt is blocked in.

    It holds a duplicate of the TCP socket: the original is detached when TLS
    wraps it, but shutdown() on any descriptor of a socket ends the
    connection for all of them."""

    def __init__(self, seconds: float):
        self._lock = threading.Lock()
        self._sock: socket.socket | None = None
        self._finished = False
        self.expired = False
        self._timer = threading.Timer(seconds, self._expire)
        self._timer.daemon = True
        self._timer.start()

    def attach(self, sock: socket.socket) -> None:
        with self._lock:
            self._sock = sock
            if self.expired:
                self._shutdown()

    def _expire(self) -> None:
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
        self._timer.cancel()
        with self._lock:
            self._finished = True
            if self._sock is not None:
                self._sock.close()
                self._sock = None


class _WatchedMixin:
    deadline: _Deadline

    def _new_conn(self) -> socket.socket:
        sock = super()._new_conn()  # type: ignore[misc]
        self.deadline.attach(sock.dup())
        return sock


class _PinnedHTTPSConnection(_WatchedMixin, HTTPSConnection):
    pass


class _PinnedHTTPConnection(_WatchedMixin, HTTPConnection):
    pass


class _ConnectFailed(Exception):
    """TCP connect to one address failed; the next address may be tried."""


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


def _open(ip: IPAddress, target: WebhookTarget, seconds: float, ca_certs: str | None,
          extra_ca_data: str | None) -> HTTPConnection:
    if target.scheme == "https":
        return _PinnedHTTPSConnection(
            host=str(ip),
            port=target.port,
            timeout=seconds,
            server_hostname=target.host,
            assert_hostname=target.host,
            cert_reqs="CERT_REQUIRED",
            # extra_ca_data is trusted beside ca_certs, not instead
            ssl_context=_tls_context(ca_certs or certifi.where(), extra_ca_data),
        )
    return _PinnedHTTPConnection(host=str(ip), port=target.port, timeout=seconds)


def _status_result(status: int) -> DeliveryResult:
    if 200 <= status < 300:
        return DeliveryResult(True, status, None)
    if 300 <= status < 400:
        return DeliveryResult(False, status, f"redirect not followed (HTTP {status})")
    return DeliveryResult(False, status, f"HTTP {status}")


def _attempt(ip: IPAddress, target: WebhookTarget, body: bytes, headers: dict[str, str],
             seconds: float, timeout: float, ca_certs: str | None,
             extra_ca_data: str | None) -> DeliveryResult:
    deadline = _Deadline(seconds)
    conn = _open(ip, target, seconds, ca_certs, extra_ca_data)
    conn.deadline = deadline
    where = f"{target.host}:{target.port}"
    try:
        try:
            conn.connect()
        except (NewConnectionError, ConnectTimeoutError) as e:
            if deadline.expired or isinstance(e.__cause__, TimeoutError):
                raise _ConnectFailed(f"could not connect to {where}: timed out") from None
            reason = getattr(e.__cause__, "strerror", None) or "connection failed"
            raise _ConnectFailed(f"could not connect to {where}: {reason.lower()}") from None
        conn.request("POST", target.request_target, body=body, headers=headers, preload_content=False)
        response = conn.getresponse()
    except (ssl.SSLCertVerificationError, CertificateError):
        return DeliveryResult(False, None, f"TLS certificate verification failed for {target.host}")
    except (OSError, HTTPException, HTTPError) as e:
        if deadline.expired:
            return DeliveryResult(False, None, f"no response within {timeout:g} s")
        if isinstance(e, ssl.SSLError):
            return DeliveryResult(False, None, f"TLS handshake with {target.host} failed")
        if isinstance(e, TimeoutError):
            return DeliveryResult(False, None, f"no response within {timeout:g} s")
        return DeliveryResult(False, None, "the connection closed before a complete response")
    else:
        if deadline.expired:
            # http.client takes the EOF our shutdown causes as the end of the
            # headers, so a status line that arrived in time must not count
            # when the rest of the head did not.
            return DeliveryResult(False, None, f"no response within {timeout:g} s")
        status = response.status
        try:
            # Only the status matters; read a bounded amount, undecoded (no
            # decompression bomb), and stop at the deadline.
            response.read(MAX_RESPONSE_BYTES, decode_content=False)
        except (OSError, HTTPException, HTTPError):
            pass
        return _status_result(status)
    finally:
        deadline.finish()
        conn.close()


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
    """POST ``body`` (the Update JSON) to ``url`` once. Only a 2xx is ok.

    ``ca_certs`` (a file) defaults to certifi's bundle; tests pass their own
    CA. ``extra_ca_data`` (PEM text) is trusted in addition to it: the
    BOTSVC_WEBHOOK_CA_BUNDLE setting, for receivers with a private CA."""
    started = time.monotonic()
    if not is_valid_secret_token(secret_token):
        return DeliveryResult(False, None, "the webhook secret_token is not valid")
    try:
        target = parse_webhook_url(url, allow_private=allow_private)
    except ApiError as e:
        return DeliveryResult(False, None, f"the webhook URL is not valid: {e.description}")
    try:
        if target.literal is None:
            addresses = resolve_allowed(target.host, target.port, allow_private=allow_private, resolve=resolve)
        elif is_allowed_address(target.literal, allow_private=allow_private):
            addresses = [target.literal]
        else:
            raise TargetRejected("non_public_address", "the webhook address may not be used")
    except TargetRejected as e:
        return DeliveryResult(False, None, e.message)

    headers = {
        "Host": target.host_header,
        "Content-Type": "application/json",
        "User-Agent": USER_AGENT,
        SECRET_HEADER: secret_token,
    }
    error = f"could not connect to {target.host}:{target.port}"
    for ip in addresses:  # next address only when the TCP connect itself failed
        remaining = timeout - (time.monotonic() - started)
        if remaining <= 0:
            return DeliveryResult(False, None, f"no response within {timeout:g} s")
        try:
            return _attempt(ip, target, body, headers, remaining, timeout, ca_certs,
                            extra_ca_data)
        except _ConnectFailed as e:
            error = str(e)
    return DeliveryResult(False, None, error)
