"""Delivery over real local HTTPS receivers (trustme CA, 127.0.0.1 only)."""
from __future__ import annotations

import json
import time

import pytest

from botsvc.webhooks.transport import DeliveryOptions, DeliveryResult, deliver
from botsvc.webhooks.urls import validate_webhook_url

HOST = "hooks.example.test"
SECRET = "s3cret_Token-0123456789abcdef"
BODY = json.dumps({"update_id": 7, "message": {"text": "héllo"}}, ensure_ascii=False).encode()


@pytest.fixture
def local(fake_resolver):
    """A resolver pinning the test name to loopback."""
    return fake_resolver({HOST: ["127.0.0.1"]})


def send(url, *, resolve, ca_file, allow_private=True, timeout=5.0, secret=SECRET) -> DeliveryResult:
    result = deliver(url, BODY, secret, DeliveryOptions(allow_private=allow_private, resolve=resolve,
                     timeout=timeout, ca_certs=ca_file))
    assert isinstance(result, DeliveryResult)
    if result.error is not None:
        assert SECRET not in result.error
    return result


def test_delivery_reaches_the_pinned_address_with_body_secret_and_host(make_receiver, local, ca_file, connections):
    receiver = make_receiver()
    result = send(f"https://{HOST}:{receiver.port}/bot/hook?x=1", resolve=local, ca_file=ca_file)
    assert result == DeliveryResult(ok=True, status=200, error=None)
    [request] = receiver.requests
    assert request["path"] == "/bot/hook?x=1"
    assert request["body"] == BODY
    headers = request["headers"]
    assert headers["x-platform-bot-secret-token"] == SECRET
    assert headers["content-type"] == "application/json"
    assert headers["host"] == f"{HOST}:{receiver.port}"
    assert headers["content-length"] == str(len(BODY))
    assert receiver.sni == [HOST]                       # TLS saw the name ...
    assert connections == [("127.0.0.1", receiver.port)]  # ... TCP went to the checked address
    assert local.calls == [(HOST, receiver.port)]         # one lookup, ours


def test_any_2xx_is_ok(make_receiver, answer, local, ca_file):
    receiver = make_receiver(answer(204, body=b""))
    assert send(f"https://{HOST}:{receiver.port}/", resolve=local, ca_file=ca_file) == DeliveryResult(True, 204, None)


def test_certificate_for_another_name_fails(make_receiver, local, ca_file):
    receiver = make_receiver(cert_for="other.example.test")
    result = send(f"https://{HOST}:{receiver.port}/", resolve=local, ca_file=ca_file)
    assert result.ok is False and result.status is None
    assert "certificate" in result.error
    assert receiver.requests == []


def test_certificate_from_an_untrusted_ca_fails(make_receiver, local):
    receiver = make_receiver()
    # Default trust store (certifi) does not know the test CA.
    result = deliver(f"https://{HOST}:{receiver.port}/", BODY, SECRET, DeliveryOptions(allow_private=True,
                     resolve=local, timeout=5.0))
    assert result.ok is False and "certificate" in result.error
    assert receiver.requests == []


@pytest.mark.parametrize("status", [301, 302, 307, 308])
def test_redirect_is_a_failure_and_is_not_followed(status, make_receiver, answer, local, ca_file, connections):
    target = make_receiver()
    location = f"https://{HOST}:{target.port}/stolen"
    redirector = make_receiver(answer(status, headers={"Location": location}))
    result = send(f"https://{HOST}:{redirector.port}/hook", resolve=local, ca_file=ca_file)
    assert result == DeliveryResult(False, status, f"redirect not followed (HTTP {status})")
    assert len(redirector.requests) == 1
    assert target.requests == []
    assert connections == [("127.0.0.1", redirector.port)]


@pytest.mark.parametrize("status", [400, 404, 429, 500, 503])
def test_error_status_is_a_failure(status, make_receiver, answer, local, ca_file):
    receiver = make_receiver(answer(status))
    assert send(f"https://{HOST}:{receiver.port}/", resolve=local, ca_file=ca_file) == \
        DeliveryResult(False, status, f"HTTP {status}")


def _hang(handler):
    handler.server.receiver.release.wait(30)


def test_receiver_that_hangs_fails_within_the_timeout(make_receiver, local, ca_file):
    receiver = make_receiver(_hang)
    started = time.monotonic()
    result = send(f"https://{HOST}:{receiver.port}/", resolve=local, ca_file=ca_file, timeout=0.4)
    elapsed = time.monotonic() - started
    assert result == DeliveryResult(False, None, "no response within 0.4 s")
    assert len(receiver.requests) == 1
    assert 0.35 <= elapsed < 1.9


def _trickle(handler):
    # One byte every 0.1 s: each read returns well within any per-read
    # socket timeout (a fraction of a second is enough to show it: the
    # timeouts here are the smallest that still do), so only a total
    # deadline can end this.
    for byte in b"HTTP/1.1 200 OK\r\nX-Slow: " + b"a" * 10_000:
        if handler.server.receiver.release.is_set():
            return
        handler.wfile.write(bytes([byte]))
        handler.wfile.flush()
        time.sleep(0.1)


def test_receiver_that_trickles_headers_fails_within_the_timeout(make_receiver, local, ca_file):
    receiver = make_receiver(_trickle)
    started = time.monotonic()
    result = send(f"https://{HOST}:{receiver.port}/", resolve=local, ca_file=ca_file, timeout=0.6)
    elapsed = time.monotonic() - started
    assert result.ok is False and result.status is None
    assert result.error == "no response within 0.6 s"
    assert elapsed < 2.1


def test_server_that_never_completes_tls_handshake_fails_within_the_timeout(silent_listener, local, ca_file):
    started = time.monotonic()
    result = send(f"https://{HOST}:{silent_listener}/", resolve=local, ca_file=ca_file, timeout=0.4)
    assert result == DeliveryResult(False, None, "no response within 0.4 s")
    assert time.monotonic() - started < 1.9


def _endless_body(handler):
    handler.send_response(200)
    handler.send_header("Transfer-Encoding", "chunked")
    handler.end_headers()
    chunk = b"4000\r\n" + b"x" * 0x4000 + b"\r\n"
    try:
        while not handler.server.receiver.release.is_set():
            handler.wfile.write(chunk)
    except OSError:
        pass


def test_response_body_read_is_bounded(make_receiver, local, ca_file):
    receiver = make_receiver(_endless_body)
    started = time.monotonic()
    result = send(f"https://{HOST}:{receiver.port}/", resolve=local, ca_file=ca_file, timeout=5.0)
    assert result == DeliveryResult(True, 200, None)
    assert time.monotonic() - started < 2.5


def test_proxies_in_the_environment_are_ignored(make_receiver, local, ca_file, dead_port, monkeypatch, connections):
    proxy = f"http://127.0.0.1:{dead_port}"
    for name in ("HTTPS_PROXY", "https_proxy", "HTTP_PROXY", "http_proxy", "ALL_PROXY", "all_proxy"):
        monkeypatch.setenv(name, proxy)
    monkeypatch.delenv("NO_PROXY", raising=False)
    monkeypatch.delenv("no_proxy", raising=False)
    receiver = make_receiver()
    result = send(f"https://{HOST}:{receiver.port}/", resolve=local, ca_file=ca_file)
    assert result == DeliveryResult(True, 200, None)
    assert connections == [("127.0.0.1", receiver.port)]


def test_next_address_is_tried_when_connect_fails(make_receiver, fake_resolver, ca_file, connections):
    receiver = make_receiver()   # listens on 127.0.0.1 only; 127.0.0.2 refuses
    resolve = fake_resolver({HOST: ["127.0.0.2", "127.0.0.1"]})
    result = send(f"https://{HOST}:{receiver.port}/", resolve=resolve, ca_file=ca_file)
    assert result == DeliveryResult(True, 200, None)
    assert connections == [("127.0.0.2", receiver.port), ("127.0.0.1", receiver.port)]


def test_connection_refused_everywhere_is_a_failure(fake_resolver, dead_port, ca_file):
    resolve = fake_resolver({HOST: ["127.0.0.1"]})
    result = send(f"https://{HOST}:{dead_port}/", resolve=resolve, ca_file=ca_file)
    assert result.ok is False and result.status is None
    assert result.error == f"could not connect to {HOST}:{dead_port}: connection refused"


def test_plain_http_to_an_ip_literal_in_private_mode(make_receiver, ca_file, fake_resolver):
    receiver = make_receiver(tls=False)
    resolve = fake_resolver({})
    result = send(f"http://127.0.0.1:{receiver.port}/hook", resolve=resolve, ca_file=ca_file)
    assert result == DeliveryResult(True, 200, None)
    assert receiver.requests[0]["headers"]["host"] == f"127.0.0.1:{receiver.port}"
    assert resolve.calls == []   # a literal needs no lookup


def test_https_to_an_ip_literal_verifies_the_certificate_for_that_address(make_receiver, ca_file, fake_resolver):
    good = make_receiver(cert_for="127.0.0.1")
    assert send(f"https://127.0.0.1:{good.port}/", resolve=fake_resolver({}), ca_file=ca_file) == \
        DeliveryResult(True, 200, None)
    named = make_receiver()   # certificate for hooks.example.test only
    result = send(f"https://127.0.0.1:{named.port}/", resolve=fake_resolver({}), ca_file=ca_file)
    assert result.ok is False and "certificate" in result.error
    assert named.requests == []


# --- DNS rebinding and mixed answers: refused before any connection.

def test_dns_rebinding_between_validation_and_delivery_is_refused(fake_resolver, connections):
    resolve = fake_resolver({"hooks.example.com": ["93.184.216.34"]},
                            {"hooks.example.com": ["127.0.0.1"]})
    url = validate_webhook_url("https://hooks.example.com/hook", allow_private=False, resolve=resolve)
    result = deliver(url, BODY, SECRET, DeliveryOptions(allow_private=False, resolve=resolve))
    assert result.ok is False and result.status is None
    assert result.error == "the host name hooks.example.com resolves to an address that is not publicly routable"
    assert resolve.calls == [("hooks.example.com", 443), ("hooks.example.com", 443)]
    assert connections == []


@pytest.mark.parametrize("answers", [
    ["93.184.216.34", "127.0.0.1"],
    ["127.0.0.1", "93.184.216.34"],
    ["2606:2800:220:1::1", "::ffff:10.0.0.1"],
    ["93.184.216.34", "169.254.169.254"],
])
def test_mixed_public_and_private_answers_are_refused_at_delivery(answers, fake_resolver, connections):
    resolve = fake_resolver({"hooks.example.com": answers})
    result = deliver("https://hooks.example.com/hook", BODY, SECRET, DeliveryOptions(allow_private=False, resolve=resolve))
    assert result.ok is False and "not publicly routable" in result.error
    assert connections == []


def test_unresolvable_name_at_delivery(fake_resolver, connections):
    result = deliver("https://gone.example.com/", BODY, SECRET, DeliveryOptions(allow_private=False, resolve=fake_resolver({})))
    assert result == DeliveryResult(False, None, "the host name gone.example.com could not be resolved")
    assert connections == []


def test_private_mode_still_refuses_metadata_address_at_delivery(fake_resolver, connections):
    resolve = fake_resolver({HOST: ["169.254.169.254"]})
    result = deliver(f"http://{HOST}:8080/", BODY, SECRET, DeliveryOptions(allow_private=True, resolve=resolve))
    assert result.ok is False and "not publicly routable" in result.error
    assert connections == []


@pytest.mark.parametrize("url", [
    "https://user:pw@hooks.example.com/",
    "https://hooks.example.com:8443/",
    "http://hooks.example.com/",
    "https://127.0.0.1/",
    "https://hooks.example.com/#x",
    "https://hooks.example.com/\r\nX: y",
])
def test_delivery_reparses_the_stored_url(url, fake_resolver, connections):
    resolve = fake_resolver({"hooks.example.com": ["93.184.216.34"]})
    result = deliver(url, BODY, SECRET, DeliveryOptions(allow_private=False, resolve=resolve))
    assert result.ok is False and result.error.startswith("the webhook URL is not valid: ")
    assert resolve.calls == [] and connections == []


@pytest.mark.parametrize("secret", ["short", "has space in it 123", "ok_token_1234567\r\nX-Evil: 1", "é" * 20])
def test_bad_secret_is_refused_without_connecting(secret, fake_resolver, connections):
    resolve = fake_resolver({"hooks.example.com": ["93.184.216.34"]})
    result = deliver("https://hooks.example.com/", BODY, secret, DeliveryOptions(allow_private=False, resolve=resolve))
    assert result == DeliveryResult(False, None, "the webhook secret_token is not valid")
    assert connections == []
