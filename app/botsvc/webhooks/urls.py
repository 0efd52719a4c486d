"""setWebhook's ``url`` rules.

A webhook URL is HTTPS to a public DNS name on port 443, without credentials
or fragment, and every address the name resolves to is publicly routable.
``allow_private`` (BOTSVC_WEBHOOK_ALLOW_PRIVATE) relaxes exactly three things:
http is allowed, any port is allowed, and loopback/private addresses (also as
canonical IP literals: dotted quad or bracketed IPv6) are allowed. The name
rules below are not relaxed.

Name rules (checked after IDNA, at setWebhook time):
- ``localhost`` and names under the special-use suffixes in
  ``RESERVED_SUFFIXES`` are refused: none of them can be a public DNS name
  (RFC 6761 localhost/test/example/invalid, RFC 6762 local, RFC 7686 onion,
  RFC 8375 home.arpa and the rest of .arpa, RFC 9476 alt, ICANN's 2024
  reservation of .internal, which also holds metadata.google.internal), and
  .lan/.home/.corp are the private suffixes routers and companies use and
  ICANN will not delegate.
- a public name has at least one dot.
The address check after resolution is the real guard; these rules exist so
a bot owner gets a clear answer at once.

Delivery (transport.py) re-parses the stored URL with ``parse_webhook_url``
(syntax, scheme, port, literal rules) and re-checks the resolved addresses
on every attempt; it does not repeat the name rules, which a stored URL has
already passed and which DNS cannot change.
"""
from __future__ import annotations

import ipaddress
import re
import unicodedata
from dataclasses import dataclass
from urllib.parse import quote, urlsplit

import idna

from botsvc.errors import ApiError, Reason, invalid
from botsvc.webhooks.addresses import (
    IPAddress,
    Resolver,
    TargetRejected,
    default_resolver,
    is_allowed_address,
    resolve_allowed,
)

MAX_URL_BYTES = 2048

RESERVED_SUFFIXES = (
    "localhost", "local", "internal", "test", "example", "invalid", "onion",
    "alt", "arpa", "lan", "home", "corp",
)

# Control characters (C0, DEL, C1), format characters (zero-width space,
# soft hyphen, bidi overrides, BOM), lone surrogates and every kind of space.
# urlsplit silently deletes tabs and newlines, and IDNA silently deletes soft
# hyphens and zero-width characters, so they are refused before either runs.
_REFUSED_CATEGORIES = frozenset({"Cc", "Cf", "Cs", "Zs", "Zl", "Zp"})

_PORT = re.compile(r"[0-9]{1,5}")
# WHATWG URL "ends in a number": a host whose last label is decimal, or hex
# with 0x, is parsed as an IPv4 address in some notation (2130706433,
# 0177.0.0.1, 0x7f000001, 127.1) by browsers and by getaddrinfo alike.
_NUMERIC_LABEL = re.compile(r"[0-9]+|0x[0-9a-f]*")


@dataclass(frozen=True)
class WebhookTarget:
    url: str                    # normalized URL
    scheme: str
    host: str                   # A-label DNS name, or the literal's text (no brackets)
    port: int
    request_target: str         # path and query, for the request line
    literal: IPAddress | None   # set only for an IP literal (allow_private only)

    @property
    def host_header(self) -> str:
        host = f"[{self.host}]" if ":" in self.host else self.host
        default = 443 if self.scheme == "https" else 80
        return host if self.port == default else f"{host}:{self.port}"


def _reject(reason: Reason | str, description: str) -> ApiError:
    return invalid("url", description, reason=Reason(reason))


def _check_characters(url: str) -> None:
    for ch in url:
        if unicodedata.category(ch) in _REFUSED_CATEGORIES:
            raise _reject(Reason.CONTROL_CHARACTERS, "url must not contain control characters or whitespace")
    if len(url.encode("utf-8")) > MAX_URL_BYTES:
        raise _reject(Reason.TOO_LONG, f"url must be at most {MAX_URL_BYTES} bytes")


def _split_netloc(netloc: str) -> tuple[str, bool, str | None]:
    """(host text, was bracketed, port text or None)."""
    if netloc.startswith("["):
        close = netloc.find("]")
        rest = netloc[close + 1:]
        if close < 0 or (rest and not rest.startswith(":")):
            raise _reject(Reason.MALFORMED, "url has a malformed host")
        return netloc[1:close], True, (rest[1:] if rest else None)
    if netloc.count(":") > 1:
        raise _reject(Reason.MALFORMED, "url has a malformed host")
    host, sep, port = netloc.partition(":")
    return host, False, (port if sep else None)


def _parse_port(port_text: str | None, scheme: str, allow_private: bool) -> int:
    if port_text is None:
        port = 443 if scheme == "https" else 80
    elif _PORT.fullmatch(port_text) and 1 <= int(port_text) <= 65535:
        port = int(port_text)
    else:
        raise _reject(Reason.PORT, "url port must be a number from 1 to 65535")
    if port != 443 and not allow_private:
        raise _reject(Reason.PORT, "url port must be 443")
    return port


def _parse_host(host_text: str, bracketed: bool, allow_private: bool) -> tuple[str, IPAddress | None]:
    """(A-label host or literal text, literal address or None)."""
    if not host_text:
        raise _reject(Reason.MALFORMED, "url must have a host name")
    if bracketed:
        try:
            literal = ipaddress.IPv6Address(host_text)
        except ValueError:
            raise _reject(Reason.MALFORMED, "url has a malformed host") from None
        if not allow_private:
            raise _reject(Reason.IP_LITERAL, "url host must be a DNS name, not an IP address")
        return str(literal), literal
    try:
        # UTS46 mapping first, so that the checks below see what DNS would:
        # fullwidth and enclosed letters, ideographic full stops and the like
        # all fold to ASCII (ⓛⓞⓒⓐⓛⓗⓞⓢⓣ is localhost).
        host = idna.encode(host_text, uts46=True, std3_rules=True, transitional=False).decode("ascii")
    except (UnicodeError, ValueError):
        raise _reject(Reason.HOST, "url host is not a valid DNS name") from None
    if host.endswith("."):
        host = host[:-1]               # the same name written as absolute
    if not host or len(host) > 253:
        raise _reject(Reason.HOST, "url host is not a valid DNS name")
    if _NUMERIC_LABEL.fullmatch(host.rsplit(".", 1)[-1]):
        # Only a literal typed in canonical dotted-quad ASCII is accepted, and
        # only when private addresses are; 127.1, 0x7f000001, ①②⑦.0.0.1 never.
        try:
            literal = ipaddress.IPv4Address(host)
        except ValueError:
            literal = None
        if allow_private and literal is not None and host_text.rstrip(".") == host:
            return host, literal
        raise _reject(Reason.IP_LITERAL, "url host must be a DNS name, not an IP address")
    return host, None


def _check_name_policy(host: str, allow_private: bool) -> None:
    labels = host.split(".")
    for i in range(len(labels)):
        if ".".join(labels[i:]) in RESERVED_SUFFIXES:
            hint = " (use an IP literal such as 127.0.0.1 for a local receiver)" if allow_private else ""
            raise _reject(Reason.RESERVED_NAME, f"url host {host} is a special-use name, not a public DNS name{hint}")
    if len(labels) < 2:
        raise _reject(Reason.SINGLE_LABEL, "url host must be a fully qualified public DNS name")


def _encode_non_ascii(text: str) -> str:
    # Existing %XX escapes and ASCII are kept as written; control characters
    # and spaces were refused earlier, so the request line stays well-formed.
    return "".join(ch if ord(ch) < 128 else quote(ch, safe="") for ch in text)


def parse_webhook_url(url: object, *, allow_private: bool) -> WebhookTarget:
    """Check the syntax, scheme, credentials, fragment, port and host of
    ``url`` (no DNS, no name policy) and return its normalized parts."""
    if not isinstance(url, str) or not url:
        raise _reject(Reason.MALFORMED, "url must be a non-empty string")
    _check_characters(url)
    try:
        parts = urlsplit(url)
    except ValueError:
        raise _reject(Reason.MALFORMED, "url is not a valid URL") from None
    scheme = parts.scheme
    if scheme != "https" and not (allow_private and scheme == "http"):
        raise _reject(Reason.SCHEME, "url must use https")
    if "#" in url:
        raise _reject(Reason.FRAGMENT, "url must not contain a fragment")
    if not parts.netloc:
        raise _reject(Reason.MALFORMED, "url must be an absolute URL with a host name")
    if "@" in parts.netloc:
        raise _reject(Reason.CREDENTIALS, "url must not contain credentials")
    if "%" in parts.netloc:
        raise _reject(Reason.HOST, "url host must not be percent-encoded")
    host_text, bracketed, port_text = _split_netloc(parts.netloc)
    port = _parse_port(port_text, scheme, allow_private)
    host, literal = _parse_host(host_text, bracketed, allow_private)

    request_target = _encode_non_ascii(parts.path or "/")
    if parts.query:
        request_target += "?" + _encode_non_ascii(parts.query)
    target = WebhookTarget("", scheme, host, port, request_target, literal)
    normalized = f"{scheme}://{target.host_header}{request_target}"
    if len(normalized.encode("ascii")) > MAX_URL_BYTES:
        raise _reject(Reason.TOO_LONG, f"url must be at most {MAX_URL_BYTES} bytes")
    return WebhookTarget(normalized, scheme, host, port, request_target, literal)


def validate_webhook_url(url: str, *, allow_private: bool, resolve: Resolver = default_resolver) -> str:
    """setWebhook's check: returns the normalized URL or raises
    INVALID_PARAMETER with ``parameters.field == "url"`` and a ``reason``.

    A name that resolves to any address that may not be used is refused now. A
    name that does not resolve at all is accepted: the contract pins addresses
    per delivery, and every delivery resolves again and checks every address,
    so nothing is reachable through it later that is refused now. Refusing it
    would make setWebhook fail on any installation without outside DNS (a CI
    machine, an offline VM), where the receiver is named but not yet reachable."""
    target = parse_webhook_url(url, allow_private=allow_private)
    if target.literal is not None:
        if not is_allowed_address(target.literal, allow_private=allow_private):
            raise _reject(Reason.NON_PUBLIC_ADDRESS, "url host is an address that may not be used")
        return target.url
    _check_name_policy(target.host, allow_private)
    try:
        resolve_allowed(target.host, target.port, allow_private=allow_private, resolve=resolve)
    except TargetRejected as e:
        if e.reason == "unresolvable":
            return target.url
        raise _reject(e.reason, f"url is not reachable: {e.message}") from None
    return target.url
