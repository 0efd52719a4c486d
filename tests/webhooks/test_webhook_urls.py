"""setWebhook url validation: every rejection is INVALID_PARAMETER on "url"."""
from __future__ import annotations

import pytest

from botsvc.errors import ApiError, ErrorCode
from botsvc.webhooks.transport import DeliveryOptions, deliver
from botsvc.webhooks.urls import parse_webhook_url, validate_webhook_url

PUBLIC = {
    "example.com": ["93.184.216.34"],
    "hooks.example.com": ["93.184.216.34", "2606:2800:220:1:248:1893:25c8:1946"],
    "xn--bcher-kva.de": ["81.169.145.78"],
    "intranet": ["93.184.216.34"],         # would resolve; refused for its shape
}

# (url, reason). Each is refused before any DNS question is asked.
BAD_SYNTAX = [
    # every notation of loopback, unspecified and private addresses
    ("https://127.0.0.1/", "ip_literal"),
    ("https://127.1/", "ip_literal"),
    ("https://127.0.1/", "ip_literal"),
    ("https://2130706433/", "ip_literal"),
    ("https://017700000001/", "ip_literal"),
    ("https://0177.0.0.1/", "ip_literal"),
    ("https://0x7f000001/", "ip_literal"),
    ("https://0x7f.0.0.1/", "ip_literal"),
    ("https://0x7F.0x0.0x0.0x1/", "ip_literal"),
    ("https://127.000.000.001/", "ip_literal"),
    ("https://0.0.0.0/", "ip_literal"),
    ("https://0/", "ip_literal"),
    ("https://10.0.0.1/", "ip_literal"),
    ("https://192.168.1.1/", "ip_literal"),
    ("https://172.16.0.1/", "ip_literal"),
    ("https://169.254.169.254/latest/meta-data/", "ip_literal"),
    ("https://100.64.0.1/", "ip_literal"),
    ("https://93.184.216.34/", "ip_literal"),          # even a public one
    ("https://[::1]/", "ip_literal"),
    ("https://[::ffff:127.0.0.1]/", "ip_literal"),
    ("https://[::ffff:7f00:1]/", "ip_literal"),
    ("https://[::]/", "ip_literal"),
    ("https://[0:0:0:0:0:0:0:1]/", "ip_literal"),
    ("https://[fe80::1]/", "ip_literal"),
    ("https://[fd00::1]/", "ip_literal"),
    ("https://[64:ff9b::7f00:1]/", "ip_literal"),
    ("https://[2606:2800:220:1::1]/", "ip_literal"),
    ("https://example.com.127.0.0.1/", "ip_literal"),  # ends in a number
    # IDNA tricks: mapped before the checks
    ("https://①②⑦.0.0.1/", "ip_literal"),
    ("https://127。0。0。1/", "ip_literal"),
    ("https://１２７.０.０.１/", "ip_literal"),
    ("https://ⓛⓞⓒⓐⓛⓗⓞⓢⓣ/", "reserved_name"),
    ("https://ＬＯＣＡＬＨＯＳＴ/", "reserved_name"),
    ("https://LocalHost./", "reserved_name"),
    ("https://localhost:443/", "reserved_name"),
    ("https://api.localhost/", "reserved_name"),
    ("https://printer.local/", "reserved_name"),
    ("https://metadata.google.internal/computeMetadata/v1/", "reserved_name"),
    ("https://metadata.google.ｉｎｔｅｒｎａｌ/", "reserved_name"),
    ("https://hooks.example.test/", "reserved_name"),
    ("https://hooks.example/", "reserved_name"),
    ("https://nothing.invalid/", "reserved_name"),
    ("https://abcdefghijklmnop.onion/", "reserved_name"),
    ("https://router.home.arpa/", "reserved_name"),
    ("https://1.0.0.127.in-addr.arpa/", "reserved_name"),
    ("https://nas.lan/", "reserved_name"),
    ("https://intranet/", "single_label"),
    ("https://xn--/", "host"),
    ("https://xn--a.com/", "host"),
    ("https://exa_mple.com/", "host"),
    ("https://-example.com/", "host"),
    ("https://a..example.com/", "host"),
    ("https://" + "a" * 64 + ".com/", "host"),
    ("https://evil.com\\.example.com/", "host"),
    # percent-encoded hosts
    ("https://%6c%6f%63%61%6c%68%6f%73%74/", "host"),
    ("https://127.0.0.%31/", "host"),
    ("https://%31%32%37%2e%30%2e%30%2e%31/", "host"),
    ("https://[::1%25lo]/", "host"),
    # credentials
    ("https://user:pass@example.com/", "credentials"),
    ("https://user@example.com/", "credentials"),
    ("https://:pass@example.com/", "credentials"),
    ("https://@example.com/", "credentials"),
    ("https://example.com@127.0.0.1/", "credentials"),
    ("https://example.com:443@evil.com/", "credentials"),
    ("https://evil.com\\@example.com/", "credentials"),
    # ports
    ("https://example.com:8443/", "port"),
    ("https://example.com:80/", "port"),
    ("https://example.com:0/", "port"),
    ("https://example.com:65536/", "port"),
    ("https://example.com:99999/", "port"),
    ("https://example.com:abc/", "port"),
    ("https://example.com:/", "port"),
    ("https://example.com:+443/", "port"),
    ("https://example.com:-443/", "port"),
    ("https://example.com:٤٤٣/", "port"),              # Arabic-Indic digits
    # fragments
    ("https://example.com/hook#", "fragment"),
    ("https://example.com/hook#frag", "fragment"),
    # control characters and whitespace, refused before urlsplit drops them
    ("https://example.com/ho\tok", "control_characters"),
    ("https://exam\nple.com/", "control_characters"),
    ("https://example.com/\r\nX-Injected: 1", "control_characters"),
    ("https://127.0.0.1\t/", "control_characters"),
    ("https://example.com/\x00", "control_characters"),
    ("https://example.com/\x7f", "control_characters"),
    ("https://example.com/\x85", "control_characters"),
    (" https://example.com/", "control_characters"),
    ("https://example.com/a b", "control_characters"),
    ("https://example.com/\u00a0", "control_characters"),
    ("https://example.com/\u2028", "control_characters"),
    ("https://local\u00adhost/", "control_characters"),   # soft hyphen: IDNA would drop it
    ("https://local\u200bhost/", "control_characters"),   # zero-width space
    ("https://example.com/\u202e", "control_characters"),
    ("https://\ufeffexample.com/", "control_characters"),
    ("https://example.com/\ud800", "control_characters"),
    # scheme and shape
    ("http://example.com/", "scheme"),
    ("HTTP://example.com/", "scheme"),
    ("ftp://example.com/", "scheme"),
    ("file:///etc/passwd", "scheme"),
    ("gopher://example.com:70/", "scheme"),
    ("javascript:alert(1)", "scheme"),
    ("//example.com/hook", "scheme"),
    ("example.com/hook", "scheme"),
    ("https:example.com", "malformed"),
    ("https:/example.com", "malformed"),
    ("https:///example.com", "malformed"),
    ("https://", "malformed"),
    ("https://[::1/", "malformed"),
    ("https://[not-ipv6]/", "malformed"),
    ("https://[::1]x/", "malformed"),
    ("https://a:b:c/", "malformed"),
    ("https://example.com＠evil.com/", "malformed"),  # NFKC would make an "@"
    ("", "malformed"),
    ("https://example.com/" + "a" * 2030, "too_long"),
    ("https://example.com/" + "é" * 1020, "too_long"),  # counted in UTF-8 bytes
]


class CountingResolver:
    def __init__(self, table=PUBLIC):
        self.table, self.calls = table, []

    def __call__(self, host, port):
        self.calls.append((host, port))
        if host not in self.table:
            raise OSError("Name or service not known")
        return self.table[host]


def reject(url, *, allow_private=False, resolve=None) -> ApiError:
    with pytest.raises(ApiError) as caught:
        validate_webhook_url(url, allow_private=allow_private, resolve=resolve or CountingResolver())
    error = caught.value
    assert error.code is ErrorCode.INVALID_PARAMETER and error.http_status == 400
    assert error.parameters["field"] == "url"
    return error


def test_the_table_is_large_enough():
    assert len(BAD_SYNTAX) >= 40


@pytest.mark.parametrize("url,reason", BAD_SYNTAX, ids=[ascii(u)[1:60] for u, _ in BAD_SYNTAX])
def test_bad_url_is_rejected_before_dns(url, reason):
    resolver = CountingResolver()
    error = reject(url, resolve=resolver)
    assert error.parameters["reason"] == reason
    assert resolver.calls == []


@pytest.mark.parametrize("value", [None, 42, b"https://example.com/", ["https://example.com/"]])
def test_non_string_is_rejected(value):
    assert reject(value).parameters["reason"] == "malformed"


# (answer for hooks.example.com, reason)
BAD_ANSWERS = [
    (["127.0.0.1"], "non_public_address"),
    (["10.0.0.7"], "non_public_address"),
    (["169.254.169.254"], "non_public_address"),
    (["::1"], "non_public_address"),
    (["::ffff:127.0.0.1"], "non_public_address"),
    (["64:ff9b::7f00:1"], "non_public_address"),
    (["::127.0.0.1"], "non_public_address"),
    (["2002:7f00:1::1"], "non_public_address"),
    (["0.0.0.0"], "non_public_address"),
    (["224.1.2.3"], "non_public_address"),
    (["93.184.216.34", "10.0.0.7"], "non_public_address"),          # mixed
    (["10.0.0.7", "93.184.216.34"], "non_public_address"),          # mixed, other order
    (["2606:2800:220:1::1", "fd00::1"], "non_public_address"),      # mixed IPv6
]


@pytest.mark.parametrize("answers,reason", BAD_ANSWERS, ids=[",".join(a) or "empty" for a, _ in BAD_ANSWERS])
def test_every_resolved_address_must_be_public(answers, reason):
    resolver = CountingResolver({"hooks.example.com": answers})
    error = reject("https://hooks.example.com/hook", resolve=resolver)
    assert error.parameters["reason"] == reason
    assert resolver.calls == [("hooks.example.com", 443)]
    for address in answers:
        assert address not in error.description   # no internal DNS oracle


@pytest.mark.parametrize("answers", [None, []], ids=["no such name", "no addresses"])
def test_a_name_that_does_not_resolve_is_accepted_and_refused_at_delivery(answers):
    # Accepted now (offline installations have no outside DNS); every delivery
    # resolves again and refuses to connect while the name has no address.
    resolver = CountingResolver({} if answers is None else {"nx.example.com": answers})
    assert validate_webhook_url("https://nx.example.com/hook", allow_private=False,
                                resolve=resolver) == "https://nx.example.com/hook"
    result = deliver("https://nx.example.com/hook", b"{}", "s" * 16, DeliveryOptions(allow_private=False,
                     resolve=resolver))
    assert result.ok is False and result.status is None
    assert "could not be resolved" in result.error


GOOD = [
    ("https://example.com", "https://example.com/"),
    ("https://example.com/hook", "https://example.com/hook"),
    ("https://Example.COM:443/Hook?x=1&y=%2F", "https://example.com/Hook?x=1&y=%2F"),
    ("HTTPS://hooks.example.com./bot/123", "https://hooks.example.com/bot/123"),
    ("https://hooks.example.com/ünïcode?q=ü", "https://hooks.example.com/%C3%BCn%C3%AFcode?q=%C3%BC"),
    ("https://bücher.de/hook", "https://xn--bcher-kva.de/hook"),
    ("https://BÜCHER.de/", "https://xn--bcher-kva.de/"),
    ("https://xn--bcher-kva.de/", "https://xn--bcher-kva.de/"),
]


@pytest.mark.parametrize("url,normalized", GOOD)
def test_good_url_is_accepted_and_normalized(url, normalized):
    resolver = CountingResolver()
    assert validate_webhook_url(url, allow_private=False, resolve=resolver) == normalized
    assert len(resolver.calls) == 1


@pytest.mark.parametrize("normalized", sorted({n for _, n in GOOD}))
def test_normalized_url_is_a_fixed_point(normalized):
    # Delivery re-parses the stored, normalized URL; it must come out unchanged.
    assert validate_webhook_url(normalized, allow_private=False, resolve=CountingResolver()) == normalized
    assert parse_webhook_url(normalized, allow_private=False).url == normalized


def test_url_of_exactly_2048_bytes_is_accepted():
    url = "https://example.com/" + "a" * (2048 - len("https://example.com/"))
    assert validate_webhook_url(url, allow_private=False, resolve=CountingResolver()) == url


# --- BOTSVC_WEBHOOK_ALLOW_PRIVATE: scheme, port and addresses relax, nothing else.

LOCAL = {"hooks.example.com": ["10.0.0.7"], "dev.example.com": ["127.0.0.1", "::1"]}


@pytest.mark.parametrize("url,normalized", [
    ("http://127.0.0.1:8080/hook", "http://127.0.0.1:8080/hook"),
    ("http://127.0.0.1/hook", "http://127.0.0.1/hook"),
    ("https://127.0.0.1:8443/", "https://127.0.0.1:8443/"),
    ("http://[::1]:8080/hook", "http://[::1]:8080/hook"),
    ("http://192.168.1.20:3000/", "http://192.168.1.20:3000/"),
    ("http://hooks.example.com:8080/hook", "http://hooks.example.com:8080/hook"),
    ("https://dev.example.com:443/", "https://dev.example.com/"),
    ("http://dev.example.com:80/", "http://dev.example.com/"),
])
def test_allow_private_relaxes_scheme_port_and_address(url, normalized):
    assert validate_webhook_url(url, allow_private=True, resolve=CountingResolver(LOCAL)) == normalized


@pytest.mark.parametrize("url,reason", [
    ("http://localhost:8080/", "reserved_name"),
    ("http://printer.local:8080/", "reserved_name"),
    ("http://devbox:8080/", "single_label"),
    ("http://127.1:8080/", "ip_literal"),
    ("http://2130706433:8080/", "ip_literal"),
    ("http://0x7f000001/", "ip_literal"),
    ("http://0177.0.0.1/", "ip_literal"),
    ("http://①②⑦.0.0.1:8080/", "ip_literal"),
    ("http://user:pw@127.0.0.1:8080/", "credentials"),
    ("http://127.0.0.1:8080/#x", "fragment"),
    ("http://127.0.0.1:8080/\t", "control_characters"),
    ("http://%31%32%37.0.0.1:8080/", "host"),
    ("ftp://127.0.0.1/", "scheme"),
    ("http://127.0.0.1:0/", "port"),
    ("http://169.254.169.254/latest/meta-data/", "non_public_address"),
    ("http://[fe80::1]:8080/", "non_public_address"),
    ("http://0.0.0.0:8080/", "non_public_address"),
    ("http://224.0.0.1:8080/", "non_public_address"),
])
def test_allow_private_relaxes_nothing_else(url, reason):
    assert reject(url, allow_private=True, resolve=CountingResolver(LOCAL)).parameters["reason"] == reason


def test_allow_private_hint_for_localhost():
    error = reject("http://localhost:8080/", allow_private=True)
    assert "127.0.0.1" in error.description


def test_parse_exposes_the_parts_transport_needs():
    target = parse_webhook_url("https://Hooks.Example.com/a/b?c=d", allow_private=False)
    assert (target.scheme, target.host, target.port) == ("https", "hooks.example.com", 443)
    assert target.request_target == "/a/b?c=d"
    assert target.host_header == "hooks.example.com" and target.literal is None
    local = parse_webhook_url("http://[::1]:8080", allow_private=True)
    assert local.host_header == "[::1]:8080" and str(local.literal) == "::1"
    assert local.request_target == "/"
