"""One request and its answer on a pinned connection (connecting it first
when it is new), and what the delivery record keeps of both.

urllib3 makes the verified connection; the exchange itself writes the request
and reads the answer with http.client's parser on the socket. No redirect is
ever followed (a 3xx is a failure like any non-2xx); at most
MAX_RESPONSE_BYTES of the answer are read, undecoded (no decompression bomb),
then it is dropped.

The record of an attempt keeps the request's and the response's headers and
body, each bounded to PREVIEW_BYTES; the secret-token header, credentials
and cookies are replaced by REDACTED, and so is the secret token wherever a
receiver echoes it back.
"""
from __future__ import annotations

import codecs
import ssl
import time
from collections.abc import Iterable
from dataclasses import dataclass, field, replace
from http.client import HTTPException, HTTPResponse, RemoteDisconnected

from urllib3.exceptions import ConnectTimeoutError, HTTPError, NewConnectionError
from urllib3.util.ssl_match_hostname import CertificateError

from botsvc.domain.webhook_deliveries import HttpRecord
from botsvc.webhooks.connections import PinnedConnection
from botsvc.webhooks.deadlines import Deadline
from botsvc.webhooks.secret_token import SECRET_HEADER
from botsvc.webhooks.urls import WebhookTarget

MAX_RESPONSE_BYTES = 64 * 1024
PREVIEW_BYTES = 4096     # of each: headers and body, request and response
REDACTED = "[redacted]"
_SECRET_HEADERS = frozenset(
    {SECRET_HEADER.lower(), "authorization", "proxy-authorization", "cookie", "set-cookie"})
_READ_CHUNK = 16 * 1024


@dataclass(frozen=True)
class DeliveryResult:
    ok: bool
    status: int | None = None   # the receiver's HTTP status, when one arrived
    error: str | None = None    # short text safe to show the bot owner
    # What the delivery record keeps (bounded, redacted); the request's
    # headers are empty when the attempt stopped before writing one.
    request: HttpRecord | None = field(default=None, compare=False)
    response: HttpRecord | None = field(default=None, compare=False)


class ConnectFailed(Exception):
    """TCP connect to one address failed; the next address may be tried."""


class Stale(Exception):
    """A kept connection turned out closed before any answer; use a new one."""


# What a kept connection the receiver closed meanwhile raises when it is used.
_STALE_ERRORS = (RemoteDisconnected, ConnectionResetError, BrokenPipeError, ssl.SSLEOFError,
                 ssl.SSLZeroReturnError)


@dataclass(frozen=True)
class Request:
    """The POST of one attempt and what its error texts need."""
    target: WebhookTarget
    headers: dict[str, str]
    body: bytes
    secret_token: str
    timeout: float      # the whole attempt's, named in "no response within"

    def wire(self) -> bytes:
        """The whole request in one buffer, sent in one TLS record: http.client
        sends the head and the body apart, which costs both sides a second
        record and system call. Every part is ASCII already checked (the URL's
        path and host by ``parse_webhook_url``, the secret by its pattern)."""
        lines = [f"POST {self.target.request_target} HTTP/1.1", "Accept-Encoding: identity",
                 *(f"{name}: {value}" for name, value in self.headers.items()),
                 f"Content-Length: {len(self.body)}", "", ""]
        return "\r\n".join(lines).encode("ascii") + self.body

    def record(self) -> HttpRecord:
        return http_record(self.headers.items(), self.body, True, self.secret_token)

    def failed(self, error: str) -> DeliveryResult:
        return DeliveryResult(False, None, error, request=self.record())

    def timed_out(self) -> DeliveryResult:
        return self.failed(f"no response within {self.timeout:g} s")


def http_record(headers: Iterable[tuple[str, str]], body: bytes, complete: bool,
                secret_token: str | None) -> HttpRecord:
    """Headers and body as the record keeps them. Whole headers are kept in
    order while they fit in PREVIEW_BYTES (a repeated name is joined with
    ", "); the body is cut at PREVIEW_BYTES, on a character boundary, and
    read as UTF-8 (anything else shows as U+FFFD)."""
    kept: dict[str, str] = {}
    size = 0
    for name, value in headers:
        if name.lower() in _SECRET_HEADERS:
            value = REDACTED
        elif secret_token and secret_token in value:
            value = value.replace(secret_token, REDACTED)
        size += len(name.encode()) + len(value.encode()) + 4    # "name: value\r\n"
        if size > PREVIEW_BYTES:
            break
        kept[name] = f"{kept[name]}, {value}" if name in kept else value
    if secret_token:
        body = body.replace(secret_token.encode("ascii"), REDACTED.encode("ascii"))
    decoder = codecs.getincrementaldecoder("utf-8")("replace")
    text = decoder.decode(body[:PREVIEW_BYTES], final=len(body) <= PREVIEW_BYTES)
    return HttpRecord(kept, text, len(body) > PREVIEW_BYTES or not complete)


def _status_result(status: int) -> DeliveryResult:
    if 200 <= status < 300:
        return DeliveryResult(True, status, None)
    if 300 <= status < 400:
        return DeliveryResult(False, status, f"redirect not followed (HTTP {status})")
    return DeliveryResult(False, status, f"HTTP {status}")


def _connect(pinned: PinnedConnection, request: Request, deadline: Deadline) -> None:
    conn = pinned.conn
    where = f"{request.target.host}:{request.target.port}"
    try:
        conn.connect()
    except (NewConnectionError, ConnectTimeoutError) as e:
        if deadline.expired or isinstance(e.__cause__, TimeoutError):
            raise ConnectFailed(f"could not connect to {where}: timed out") from None
        reason = getattr(e.__cause__, "strerror", None) or "connection failed"
        raise ConnectFailed(f"could not connect to {where}: {reason.lower()}") from None


def _failure(e: Exception, request: Request, deadline: Deadline, reused: bool) -> DeliveryResult:
    """What an attempt that got no answer reports."""
    host = request.target.host
    if isinstance(e, (ssl.SSLCertVerificationError, CertificateError)):
        return request.failed(f"TLS certificate verification failed for {host}")
    if deadline.expired:
        return request.timed_out()
    if reused and isinstance(e, _STALE_ERRORS):
        raise Stale from None
    if isinstance(e, ssl.SSLError):
        return request.failed(f"TLS handshake with {host} failed")
    if isinstance(e, TimeoutError):
        return request.timed_out()
    return request.failed("the connection closed before a complete response")


def _read_body(response: HTTPResponse) -> tuple[bytes, bool]:
    """At most MAX_RESPONSE_BYTES of the body, and whether reading it ended
    without an error (the deadline's shutdown is one)."""
    chunks: list[bytes] = []
    size = 0
    try:
        while size < MAX_RESPONSE_BYTES and not response.isclosed():
            chunk = response.read(min(_READ_CHUNK, MAX_RESPONSE_BYTES - size))
            if not chunk:
                break
            chunks.append(chunk)
            size += len(chunk)
    except (OSError, HTTPException):
        return b"".join(chunks), False
    return b"".join(chunks), True


def _answer(response: HTTPResponse, request: Request,
            deadline: Deadline) -> tuple[DeliveryResult, bool]:
    if deadline.expired:
        # http.client takes the EOF our shutdown causes as the end of the
        # headers, so a status line that arrived in time must not count
        # when the rest of the head did not.
        return request.timed_out(), False
    body, complete = _read_body(response)
    result = replace(_status_result(response.status), request=request.record(),
                     response=http_record(response.getheaders(), body, complete,
                                          request.secret_token))
    # Kept only when the answer was read to its end in time and neither
    # side asked to close (Connection: close, or an HTTP/1.0 answer).
    keep = (complete and response.isclosed() and not response.will_close
            and not deadline.expired)
    return result, keep


def exchange(pinned: PinnedConnection, request: Request,
             seconds: float) -> tuple[DeliveryResult, bool]:
    """``request`` on ``pinned`` within ``seconds``; returns the result and
    whether the connection may be kept. Raises ConnectFailed when a new
    connection could not connect, Stale when a kept one was found closed."""
    deadline = Deadline(seconds)
    conn = pinned.conn
    conn.deadline = deadline
    conn.timeout = seconds
    reused = conn.sock is not None
    response: HTTPResponse | None = None
    try:
        if reused:
            deadline.attach(pinned.watch)
        else:
            _connect(pinned, request, deadline)
        conn.sock.settimeout(seconds)
        conn.sock.sendall(request.wire())
        response = HTTPResponse(conn.sock, method="POST")
        response.begin()
    except (OSError, HTTPException, HTTPError, CertificateError) as e:
        return _failure(e, request, deadline, reused), False
    else:
        return _answer(response, request, deadline)
    finally:
        if response is not None:
            response.close()
        deadline.finish()
        pinned.last_used = time.monotonic()
        pinned.exchanges += 1
