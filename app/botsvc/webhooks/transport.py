"""One webhook delivery attempt over a pinned, verified connection.

Per attempt:
- the stored URL is parsed again and its name resolved again; every answer
  must pass the address rule, otherwise nothing is contacted (a name that
  answered 93.184.216.34 at setWebhook and 127.0.0.1 now is refused);
- the TCP connection goes to one of those checked addresses, while TLS still
  verifies the certificate for the host name (SNI and hostname check use the
  name, the socket uses the address), so there is no second lookup anywhere
  (``connections.open_pinned``; no proxy from the environment);
- the request and its answer: ``exchange.py`` (no redirect followed, a
  bounded read, what the record keeps of both);
- the whole attempt (connect, TLS, sending, reading) ends at a hard deadline
  (10 s by default, ``deadlines.py``);
- a connection that ended its exchange cleanly may be kept for the bot's
  next delivery (connections.py says when it is used again); a kept
  connection the receiver turns out to have closed, before any answer came,
  is replaced by a new one within the same attempt and deadline.

The secret token goes only into the X-Platform-Bot-Secret-Token header; it
never appears in DeliveryResult.error, in the attempt's record (redacted) or
in a log line. This module logs nothing itself: the caller records
DeliveryResult.error as last_error.
"""
from __future__ import annotations

import functools
import time
from dataclasses import dataclass

from botsvc.errors import ApiError
from botsvc.webhooks.addresses import (
    IPAddress,
    Resolver,
    TargetRejected,
    default_resolver,
    is_allowed_address,
    resolve_allowed,
)
from botsvc.webhooks.connections import PinnedConnection, Route, open_pinned
from botsvc.webhooks.exchange import (
    MAX_RESPONSE_BYTES,
    PREVIEW_BYTES,
    ConnectFailed,
    DeliveryResult,
    Request,
    Stale,
    exchange,
    http_record,
)
from botsvc.webhooks.secret_token import SECRET_HEADER, is_valid_secret_token
from botsvc.webhooks.urls import WebhookTarget, parse_webhook_url

__all__ = ["DEFAULT_TIMEOUT", "MAX_RESPONSE_BYTES", "PREVIEW_BYTES", "USER_AGENT",
           "DeliveryOptions", "DeliveryResult", "deliver", "deliver_kept"]

DEFAULT_TIMEOUT = 10.0
USER_AGENT = "botsvc-webhook/1"


@dataclass(frozen=True)
class DeliveryOptions:
    """How attempts are made: the installation's settings, and what tests
    substitute. ``ca_certs`` (a file) defaults to certifi's bundle; tests
    pass their own CA. ``extra_ca_data`` (PEM text) is trusted in addition
    to it: the BOTSVC_WEBHOOK_CA_BUNDLE setting, for receivers with a
    private CA."""
    allow_private: bool
    resolve: Resolver = default_resolver
    timeout: float = DEFAULT_TIMEOUT
    ca_certs: str | None = None
    extra_ca_data: str | None = None


def deliver(url: str, body: bytes, secret_token: str,
            options: DeliveryOptions) -> DeliveryResult:
    """POST ``body`` (the Update JSON) to ``url`` once over a new connection,
    closed afterwards. Only a 2xx is ok."""
    result, kept = deliver_kept(url, body, secret_token, options, kept=None)
    if kept is not None:
        kept.close()
    return result


@functools.lru_cache(maxsize=1024)
def _parsed(url: str, allow_private: bool) -> WebhookTarget:
    """The stored URL parsed again: a pure function of its text and the
    setting, so the answer is remembered (IDNA and the checks cost a sixth of
    a delivery over a kept connection). A refused URL is not remembered."""
    return parse_webhook_url(url, allow_private=allow_private)


def _checked_addresses(target: WebhookTarget, options: DeliveryOptions) -> list[IPAddress]:
    """The addresses this attempt may use, every one of them allowed."""
    if target.literal is None:
        return resolve_allowed(target.host, target.port, allow_private=options.allow_private,
                               resolve=options.resolve)
    if is_allowed_address(target.literal, allow_private=options.allow_private):
        return [target.literal]
    raise TargetRejected("non_public_address", "the webhook address may not be used")


def _refused(body: bytes, error: str, secret_token: str | None) -> DeliveryResult:
    """An attempt stopped before any request was written: the record keeps
    the body it would have carried (any echo of a valid secret redacted),
    and no headers."""
    return DeliveryResult(False, None, error, request=http_record((), body, True, secret_token))


def _request(url: str, body: bytes, secret_token: str,
             options: DeliveryOptions) -> tuple[Request, list[Route]] | DeliveryResult:
    """The request and the routes this attempt may take, or why none."""
    if not is_valid_secret_token(secret_token):
        return _refused(body, "the webhook secret_token is not valid", None)
    try:
        target = _parsed(url, options.allow_private)
        addresses = _checked_addresses(target, options)
    except ApiError as e:
        return _refused(body, f"the webhook URL is not valid: {e.description}", secret_token)
    except TargetRejected as e:
        return _refused(body, e.message, secret_token)
    trust = (options.ca_certs, options.extra_ca_data)
    tls_host = target.host if target.scheme == "https" else None
    routes = [Route(target.scheme, str(ip), target.port, tls_host, trust) for ip in addresses]
    headers = {"Host": target.host_header, "Content-Type": "application/json",
               "User-Agent": USER_AGENT, SECRET_HEADER: secret_token}
    return Request(target, headers, body, secret_token, options.timeout), routes


def deliver_kept(url: str, body: bytes, secret_token: str, options: DeliveryOptions, *,
                 kept: PinnedConnection | None) -> tuple[DeliveryResult, PinnedConnection | None]:
    """``deliver`` that may use ``kept`` (the bot's connection from its last
    delivery, now the caller's) and returns the connection to keep for the
    next one, or None. ``kept`` is used only when its route is one this
    attempt's checks allow; otherwise, or when it fails, it is closed."""
    started = time.monotonic()
    try:
        prepared = _request(url, body, secret_token, options)
        if isinstance(prepared, DeliveryResult):
            return prepared, None
        request, routes = prepared
        if kept is not None and kept.route in routes and kept.usable(time.monotonic()):
            reuse, kept = kept, None
            try:
                result, keep = exchange(reuse, request, options.timeout - (time.monotonic() - started))
                return result, _kept_or_closed(reuse, keep)
            except Stale:
                reuse.close()
        return _over_new_connection(request, routes, started)
    finally:
        if kept is not None:   # not usable for this attempt
            kept.close()


def _over_new_connection(request: Request, routes: list[Route],
                         started: float) -> tuple[DeliveryResult, PinnedConnection | None]:
    """Try the routes in order, the next only when the TCP connect itself failed."""
    target = request.target
    error = f"could not connect to {target.host}:{target.port}"
    for route in routes:
        remaining = request.timeout - (time.monotonic() - started)
        if remaining <= 0:
            return request.timed_out(), None
        pinned = open_pinned(route, remaining)
        try:
            result, keep = exchange(pinned, request, remaining)
        except ConnectFailed as e:
            pinned.close()
            error = str(e)
            continue
        return result, _kept_or_closed(pinned, keep)
    return request.failed(error), None


def _kept_or_closed(pinned: PinnedConnection, keep: bool) -> PinnedConnection | None:
    if keep:
        return pinned
    pinned.close()
    return None
