"""Which IP addresses a webhook may be delivered to, and resolving names to them.

We keep our own deny list instead of trusting ``ipaddress.is_global``: that
property is True for 224.1.2.3, ff02::1, fec0::1, ::127.0.0.1, 64:ff9b::7f00:1
and 192.88.99.1, and its answers changed between Python releases.

The list follows what two projects that deliver to user-supplied URLs publish:

- Synapse, ``DEFAULT_IP_RANGE_BLOCKLIST`` in ``synapse/config/server.py``
  (element-hq/synapse), whose ``generate_ip_set`` also adds the
  IPv4-compatible, IPv4-mapped and 6to4 forms of every IPv4 range;
- Svix, ``is_allowed`` in ``server/svix-server/src/core/webhook_http_client.rs``
  (svix/svix-webhooks), which canonicalises IPv4-mapped addresses first and
  adds shared (CGNAT), benchmarking and reserved ranges;

plus the IANA special-purpose registries (RFC 6890 and its updates) for the
IPv6 ranges neither lists (discard-only, ORCHID, 3fff::/20, NAT64 local-use).
"""
from __future__ import annotations

import ipaddress
import socket
from collections.abc import Callable

IPAddress = ipaddress.IPv4Address | ipaddress.IPv6Address
Resolver = Callable[[str, int], list[str]]


def _table(rows: tuple[tuple[str, str], ...]) -> tuple[tuple[ipaddress._BaseNetwork, str], ...]:
    return tuple((ipaddress.ip_network(cidr), label) for cidr, label in rows)


_DENIED_V4 = _table((
    ("0.0.0.0/8", "unspecified"),          # "this network"; 0.0.0.0 reaches localhost on Linux
    ("10.0.0.0/8", "private"),
    ("100.64.0.0/10", "shared (CGNAT)"),   # also Alibaba Cloud's metadata at 100.100.100.200
    ("127.0.0.0/8", "loopback"),
    ("169.254.0.0/16", "link-local"),      # cloud metadata at 169.254.169.254
    ("172.16.0.0/12", "private"),
    ("192.0.0.0/24", "IETF protocol assignments"),  # Oracle Cloud metadata 192.0.0.192
    ("192.0.2.0/24", "documentation"),
    ("192.88.99.0/24", "6to4 relay anycast"),
    ("192.168.0.0/16", "private"),
    ("198.18.0.0/15", "benchmarking"),
    ("198.51.100.0/24", "documentation"),
    ("203.0.113.0/24", "documentation"),
    ("224.0.0.0/4", "multicast"),
    ("240.0.0.0/4", "reserved"),           # includes the broadcast 255.255.255.255
))

# Checked before the embedded-IPv4 forms, so ::1 is called loopback and not
# "the IPv4-compatible form of 0.0.0.1".
_DENIED_V6 = _table((
    ("::/128", "unspecified"),
    ("::1/128", "loopback"),
    ("64:ff9b:1::/48", "NAT64 local-use"),  # RFC 8215: where the IPv4 sits is the
                                            # operator's choice, so it cannot be judged
    ("100::/64", "discard-only"),
    ("2001::/23", "IETF protocol assignments"),  # Teredo 2001::/32 (its client address is
                                                 # obfuscated), ORCHID, benchmarking 2001:2::/48
    ("2001:db8::/32", "documentation"),
    ("3fff::/20", "documentation"),
    ("5f00::/16", "segment routing"),
    ("fc00::/7", "private"),                # unique local
    ("fe80::/10", "link-local"),
    ("fec0::/10", "site-local"),
    ("ff00::/8", "multicast"),
))

_GLOBAL_UNICAST_V6 = ipaddress.ip_network("2000::/3")

# Forms that carry an IPv4 address which is where the packets actually go.
_IPV4_COMPATIBLE = ipaddress.ip_network("::/96")
_NAT64_WELL_KNOWN = ipaddress.ip_network("64:ff9b::/96")

# BOTSVC_WEBHOOK_ALLOW_PRIVATE lets developers reach their own machine and LAN,
# but these never hold a webhook receiver and include the cloud metadata
# service, so they stay denied even then.
_DENIED_EVEN_WHEN_PRIVATE_ALLOWED = frozenset(
    {"unspecified", "link-local", "multicast", "reserved"}
)


def _v4_reason(ip: ipaddress.IPv4Address) -> str | None:
    for network, label in _DENIED_V4:
        if ip in network:
            return label
    return None


def _embedded_ipv4(ip: ipaddress.IPv6Address) -> ipaddress.IPv4Address | None:
    if ip.ipv4_mapped is not None:                 # ::ffff:0:0/96
        return ip.ipv4_mapped
    if ip.sixtofour is not None:                   # 2002::/16
        return ip.sixtofour
    if ip in _IPV4_COMPATIBLE or ip in _NAT64_WELL_KNOWN:
        return ipaddress.IPv4Address(int(ip) & 0xFFFFFFFF)
    return None


def denied_reason(ip: IPAddress) -> str | None:
    """A short label ("loopback", "private", ...) when ``ip`` is not a
    publicly routable unicast address, else None."""
    if isinstance(ip, ipaddress.IPv4Address):
        return _v4_reason(ip)
    for network, label in _DENIED_V6:
        if ip in network:
            return label
    embedded = _embedded_ipv4(ip)
    if embedded is not None:
        return _v4_reason(embedded)
    # Only 2000::/3 is allocated for global unicast; anything else (including
    # the deprecated ::ffff:0:0:0/96 "IPv4-translated" form) is not a host we
    # should reach.
    if ip not in _GLOBAL_UNICAST_V6:
        return "not global unicast"
    return None


def is_public_address(ip: IPAddress) -> bool:
    """True when ``ip`` is a publicly routable unicast address."""
    return denied_reason(ip) is None


def is_allowed_address(ip: IPAddress, *, allow_private: bool) -> bool:
    """The address rule for webhooks; ``allow_private`` relaxes it to admit
    loopback, private, CGNAT and the like, but never unspecified, link-local,
    multicast or reserved addresses."""
    reason = denied_reason(ip)
    if reason is None:
        return True
    return allow_private and reason not in _DENIED_EVEN_WHEN_PRIVATE_ALLOWED


def default_resolver(host: str, port: int) -> list[str]:
    """Every address ``host`` resolves to for a TCP connection, in the order the
    system resolver gives them, without duplicates.

    Whatever the system resolver does (hosts file, resolv.conf search domains
    such as Kubernetes' ``ndots:5``), its answers are only used after every
    one of them has passed the address rule."""
    infos = socket.getaddrinfo(host, port, type=socket.SOCK_STREAM, proto=socket.IPPROTO_TCP)
    seen: list[str] = []
    for _family, _type, _proto, _canon, sockaddr in infos:
        address = sockaddr[0]
        if address not in seen:
            seen.append(address)
    return seen


class TargetRejected(Exception):
    """The destination may not be contacted. ``reason`` is a stable snake_case
    word; ``message`` is safe to show the bot owner (no internal addresses)."""

    def __init__(self, reason: str, message: str):
        super().__init__(message)
        self.reason = reason
        self.message = message


def resolve_allowed(host: str, port: int, *, allow_private: bool, resolve: Resolver) -> list[IPAddress]:
    """Resolve ``host`` and return its addresses, all of which passed the
    address rule; raise TargetRejected when the name does not resolve or ANY
    answer is not allowed (a mixed public/private answer is refused whole,
    since the attacker controls which answer the connection would use).

    The message never repeats the address: that would let a caller probe
    what internal names resolve to."""
    try:
        answers = resolve(host, port)
    except (OSError, ValueError):  # gaierror, timeouts, UnicodeError
        raise TargetRejected("unresolvable", f"the host name {host} could not be resolved") from None
    addresses: list[IPAddress] = []
    for answer in answers:
        try:
            ip = ipaddress.ip_address(answer)
        except ValueError:
            raise TargetRejected("unresolvable", f"the host name {host} could not be resolved") from None
        if not is_allowed_address(ip, allow_private=allow_private):
            raise TargetRejected(
                "non_public_address",
                f"the host name {host} resolves to an address that is not publicly routable",
            )
        if ip not in addresses:
            addresses.append(ip)
    if not addresses:
        raise TargetRejected("unresolvable", f"the host name {host} could not be resolved")
    return addresses
