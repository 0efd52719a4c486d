"""The address deny list, independent of ipaddress.is_global."""
from __future__ import annotations

import ipaddress
import socket

import pytest

from botsvc.webhooks.addresses import (
    TargetRejected,
    default_resolver,
    denied_reason,
    is_allowed_address,
    is_public_address,
    resolve_allowed,
)

# (address, label or None when public)
TABLE = [
    # ipaddress.is_global says True for these (a known trap); we must refuse them.
    ("224.1.2.3", "multicast"),
    ("ff02::1", "multicast"),
    ("fec0::1", "site-local"),
    ("::127.0.0.1", "loopback"),          # IPv4-compatible
    ("64:ff9b::7f00:1", "loopback"),      # NAT64 well-known prefix
    ("192.88.99.1", "6to4 relay anycast"),
    # IPv4
    ("0.0.0.0", "unspecified"),
    ("0.1.2.3", "unspecified"),
    ("10.0.0.1", "private"),
    ("10.255.255.255", "private"),
    ("100.64.0.1", "shared (CGNAT)"),
    ("100.100.100.200", "shared (CGNAT)"),
    ("100.127.255.255", "shared (CGNAT)"),
    ("127.0.0.1", "loopback"),
    ("127.255.255.254", "loopback"),
    ("169.254.169.254", "link-local"),
    ("172.16.0.1", "private"),
    ("172.31.255.255", "private"),
    ("192.0.0.192", "IETF protocol assignments"),
    ("192.0.2.1", "documentation"),
    ("192.168.1.1", "private"),
    ("198.18.0.1", "benchmarking"),
    ("198.19.255.255", "benchmarking"),
    ("198.51.100.7", "documentation"),
    ("203.0.113.9", "documentation"),
    ("239.255.255.250", "multicast"),
    ("240.0.0.1", "reserved"),
    ("255.255.255.255", "reserved"),
    # IPv6
    ("::", "unspecified"),
    ("::1", "loopback"),
    ("fe80::1", "link-local"),
    ("fe80::1%eth0", "link-local"),
    ("fc00::1", "private"),
    ("fd12:3456:789a::1", "private"),
    ("ff05::2", "multicast"),
    ("100::1", "discard-only"),
    ("2001:db8::1", "documentation"),
    ("3fff::1", "documentation"),
    ("2001:10::1", "IETF protocol assignments"),       # ORCHID
    ("2001:20::1", "IETF protocol assignments"),       # ORCHIDv2
    ("2001:2::1", "IETF protocol assignments"),        # benchmarking
    ("2001:0:4136:e378:8000:63bf:3fff:fdd2", "IETF protocol assignments"),  # Teredo
    ("5f00::1", "segment routing"),
    ("64:ff9b:1::a00:1", "NAT64 local-use"),
    ("64:ff9b:1::808:808", "NAT64 local-use"),
    ("::ffff:0:808:808", "not global unicast"),        # IPv4-translated (RFC 2765)
    ("4000::1", "not global unicast"),
    # Embedded IPv4, judged by the IPv4 inside.
    ("::ffff:127.0.0.1", "loopback"),
    ("::ffff:10.1.2.3", "private"),
    ("::ffff:169.254.169.254", "link-local"),
    ("::ffff:0.0.0.0", "unspecified"),
    ("::10.0.0.1", "private"),
    ("::0.0.0.2", "unspecified"),
    ("64:ff9b::a9fe:a9fe", "link-local"),
    ("64:ff9b::c0a8:101", "private"),
    ("2002:7f00:1::1", "loopback"),                   # 6to4 of 127.0.0.1
    ("2002:a00:1::", "private"),                      # 6to4 of 10.0.0.1
    ("2002:c058:6301::1", "6to4 relay anycast"),
    # Public
    ("93.184.216.34", None),
    ("8.8.8.8", None),
    ("1.1.1.1", None),
    ("100.63.255.255", None),     # just below CGNAT
    ("100.128.0.0", None),        # just above CGNAT
    ("172.15.255.255", None),
    ("172.32.0.0", None),
    ("198.17.255.255", None),
    ("198.20.0.0", None),
    ("223.255.255.255", None),
    ("2606:2800:220:1:248:1893:25c8:1946", None),
    ("2001:4860:4860::8888", None),
    ("::ffff:8.8.8.8", None),
    ("::8.8.8.8", None),
    ("64:ff9b::808:808", None),
    ("2002:808:808::1", None),
]


@pytest.mark.parametrize("text,label", TABLE, ids=[row[0] for row in TABLE])
def test_address_table(text, label):
    ip = ipaddress.ip_address(text)
    assert denied_reason(ip) == label
    assert is_public_address(ip) is (label is None)


@pytest.mark.parametrize("text", ["127.0.0.1", "10.0.0.1", "192.168.1.1", "172.16.0.1", "100.64.0.1",
                                  "::1", "fd00::1", "::ffff:127.0.0.1", "198.18.0.1"])
def test_allow_private_admits_local_and_private(text):
    ip = ipaddress.ip_address(text)
    assert not is_allowed_address(ip, allow_private=False)
    assert is_allowed_address(ip, allow_private=True)


@pytest.mark.parametrize("text", ["0.0.0.0", "::", "169.254.169.254", "fe80::1", "224.0.0.1",
                                  "ff02::1", "255.255.255.255", "240.0.0.1", "::ffff:169.254.169.254"])
def test_allow_private_still_denies_metadata_multicast_and_unspecified(text):
    assert not is_allowed_address(ipaddress.ip_address(text), allow_private=True)


def test_resolve_allowed_refuses_a_mixed_answer_whole():
    resolve = lambda host, port: ["93.184.216.34", "10.0.0.5"]  # noqa: E731
    with pytest.raises(TargetRejected) as caught:
        resolve_allowed("hooks.example.com", 443, allow_private=False, resolve=resolve)
    assert caught.value.reason == "non_public_address"
    assert "10.0.0.5" not in caught.value.message


def test_resolve_allowed_keeps_order_and_drops_duplicates():
    resolve = lambda host, port: ["93.184.216.34", "2606:2800:220:1::1", "93.184.216.34"]  # noqa: E731
    got = resolve_allowed("hooks.example.com", 443, allow_private=False, resolve=resolve)
    assert got == [ipaddress.ip_address("93.184.216.34"), ipaddress.ip_address("2606:2800:220:1::1")]


@pytest.mark.parametrize("answers", [[], ["not-an-address"]])
def test_resolve_allowed_refuses_empty_or_garbage_answers(answers):
    with pytest.raises(TargetRejected) as caught:
        resolve_allowed("hooks.example.com", 443, allow_private=False, resolve=lambda h, p: answers)
    assert caught.value.reason == "unresolvable"


def test_resolve_allowed_turns_resolver_errors_into_rejection():
    def failing(host, port):
        raise socket.gaierror(socket.EAI_NONAME, "Name or service not known")
    with pytest.raises(TargetRejected) as caught:
        resolve_allowed("nx.example.com", 443, allow_private=False, resolve=failing)
    assert caught.value.reason == "unresolvable"


def test_default_resolver_uses_getaddrinfo_and_returns_strings():
    # Loopback only: the hosts file answers, no network is touched.
    assert default_resolver("127.0.0.1", 443) == ["127.0.0.1"]
    assert default_resolver("localhost", 443)[0] in {"127.0.0.1", "::1"}
