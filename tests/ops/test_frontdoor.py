"""The front door: the real nginx, configured from the template that
scripts/install-service installs (scripts/nginx/botsvc.conf), in front of the
real botsvc (docs/production.md)."""
from __future__ import annotations

import re
import socket
import time

import pytest
import requests

from botsvc.connection import request_head
from botsvc.devkit.frontdoor_process import running_frontdoor
from botsvc.devkit.servers import running_server
from botsvc.devkit.slow_clients import percentile, slow_client_flood, timed_get_me
from botsvc.testkit.server import free_port

pytestmark = pytest.mark.server

UPLOAD_MAX = 256 * 1024
MiB = 1024 * 1024
MADE_ID = re.compile(r"^[0-9a-f]{32}$")     # what nginx and botsvc make
CLIENT_ID = re.compile(r"^[A-Za-z0-9._:-]{1,128}$")


@pytest.fixture(scope="module")
def server(tmp_path_factory):
    with running_server(tmp_path_factory.mktemp("svc"),
                        BOTSVC_UPLOAD_MAX_BYTES=str(UPLOAD_MAX)) as started:
        yield started


@pytest.fixture(scope="module")
def door(server, tmp_path_factory):
    with running_frontdoor(tmp_path_factory.mktemp("nginx"), server) as started:
        yield started


@pytest.fixture(scope="module")
def token(server):
    return server.operator("createBot", username="door_bot")["token"]


def assert_envelope(answer, status: int, code: str, parameters: dict) -> dict:
    assert answer.status_code == status, answer.text
    assert answer.headers["Content-Type"] == "application/json"
    body = answer.json()
    assert (body["ok"], body["error_code"], body["parameters"]) == (False, code, parameters)
    assert isinstance(body["description"], str) and body["description"]
    assert CLIENT_ID.match(answer.headers["X-Request-Id"])
    return body


def in_access_log(door, text: str, seconds: float = 5.0) -> bool:
    """Whether ``text`` is in the proxy's access log: nginx writes a
    request's line once it has finalized the request, which can be just
    after the client has read the whole answer."""
    deadline = time.monotonic() + seconds
    while text not in door.access_log.read_text():
        if time.monotonic() >= deadline:
            return False
        time.sleep(0.02)
    return True


def test_calls_pass_with_their_request_id(door, token):
    auth = {"Authorization": f"Bearer {token}"}
    answer = requests.post(f"{door.base_url}/v2/getMe", json={}, timeout=30,
                           headers={**auth, "X-Request-Id": "mine-1"})
    assert answer.status_code == 200 and answer.json()["result"]["username"] == "door_bot"
    assert answer.headers["X-Request-Id"] == "mine-1"
    # Without one (or a malformed one), the proxy's own, which botsvc is handed:
    # one id for the answer and both logs.
    answer = requests.post(f"{door.base_url}/v2/getMe", json={}, timeout=30,
                           headers={**auth, "X-Request-Id": "not one!"})
    made = answer.headers["X-Request-Id"]
    assert MADE_ID.match(made)
    assert in_access_log(door, made)


def test_the_proxys_refusals_answer_in_the_envelope(door, token):
    auth = {"Authorization": f"Bearer {token}", "X-Request-Id": "mine-1"}
    too_large = requests.post(f"{door.base_url}/v2/uploadFile", timeout=30, headers=auth,
                              files={"file": ("big.bin", b"\0" * (4 * MiB))},
                              data={"type": "document"})
    body = assert_envelope(too_large, 413, "REQUEST_TOO_LARGE", {"limit": UPLOAD_MAX})
    # Word for word what botsvc answers past its upload ceiling.
    assert body["description"] == f"Request body is larger than {UPLOAD_MAX} bytes"
    assert too_large.headers["X-Request-Id"] == "mine-1"
    line = requests.get(f"{door.base_url}/" + "a" * 20000, timeout=30)
    assert_envelope(line, 414, "URI_TOO_LONG", {"limit": request_head.REQUEST_LINE_MAX_BYTES})
    field = requests.get(f"{door.base_url}/healthz", headers={"X-Big": "v" * 20000}, timeout=30)
    assert_envelope(field, 431, "HEADERS_TOO_LARGE", {"limit": request_head.HEAD_MAX_BYTES})
    # Between the proxy's limits and botsvc's, botsvc answers as it does alone.
    line = requests.get(f"{door.base_url}/" + "a" * 9000, timeout=30)
    assert_envelope(line, 414, "URI_TOO_LONG", {"limit": request_head.REQUEST_LINE_MAX_BYTES})


@pytest.mark.alone
def test_too_many_requests_from_one_address_answer_429_with_retry_after(server, tmp_path):
    with running_frontdoor(tmp_path, server, client_rate=2, client_burst=2) as strict:
        answers = [requests.get(f"{strict.base_url}/healthz", timeout=30) for _ in range(10)]
    assert answers[0].status_code == 200   # within the rate and its burst
    refused = answers[-1]
    assert_envelope(refused, 429, "RATE_LIMITED", {"retry_after": 1})
    assert refused.headers["Retry-After"] == "1"


def test_botsvc_not_answering_is_503_in_the_envelope(server, tmp_path):
    class Gone:   # a port nothing listens on
        port = free_port()
        env = server.env
    with running_frontdoor(tmp_path, Gone) as orphan:
        answer = requests.get(f"{orphan.base_url}/healthz", timeout=30)
    assert_envelope(answer, 503, "NOT_READY", {})


def test_bodies_botsvc_refuses_unread_still_answer_through_the_proxy(door, token):
    """botsvc answers before the proxy has sent the body, and closes; its
    lingering close keeps nginx from taking that for a failure (502)."""
    with requests.Session() as session:
        for _ in range(3):
            answer = session.post(f"{door.base_url}/v2/uploadFile", timeout=60,
                                  files={"file": ("big.bin", b"\0" * (UPLOAD_MAX - 1024))},
                                  headers={"Authorization": "Bearer 1:nope"})
            assert_envelope(answer, 401, "UNAUTHORIZED", {})
            answer = session.post(f"{door.base_url}/v2/sendMessage", timeout=60,
                                  data=b"x" * (UPLOAD_MAX - 1024),
                                  headers={"Authorization": f"Bearer {token}",
                                           "Content-Type": "application/json"})
            assert answer.status_code == 400    # read: within the JSON limit, not JSON
            answer = session.post(f"{door.base_url}/v2/getMe", json={}, timeout=30,
                                  headers={"Authorization": f"Bearer {token}"})
            assert answer.status_code == 200


def test_the_proxys_logs_hold_no_query_string_and_no_token(door, token):
    secret = "f" * 64
    answer = requests.get(f"{door.base_url}/download.php?id={'a' * 48}&exp=1&sig={secret}",
                          timeout=30)
    assert answer.status_code == 401
    me = requests.post(f"{door.base_url}/v2/getMe", json={}, timeout=30,
                       headers={"Authorization": f"Bearer {token}"})
    # Both lines written first: what is looked for below is then not missing
    # merely because nginx had not written it yet.
    assert in_access_log(door, '"GET /download.php" 401')
    assert in_access_log(door, me.headers["X-Request-Id"])
    for name in ("botsvc.access.log", "botsvc.error.log"):
        logged = (door.dir / name).read_text() if (door.dir / name).exists() else ""
        assert secret not in logged and token not in logged and "exp=" not in logged


def test_behind_the_proxy_each_client_address_has_its_own_sign_in_throttle(door, server):
    def sign_in(token: str, source: str) -> int:
        with socket.create_connection(("127.0.0.1", door.port), timeout=30,
                                      source_address=(source, 0)) as sock:
            page = _http(sock, b"GET /sandbox/signin HTTP/1.1\r\nHost: x\r\n\r\n")
            form = re.search(rb'name="csrf_token" value="([^"]+)"', page).group(1)
            cookie = re.search(rb"Set-Cookie: (botsvc_sandbox_signin=[^;]+)", page).group(1)
            body = b"csrf_token=" + form + b"&token=" + token.encode()
            answer = _http(sock, b"POST /sandbox/signin HTTP/1.1\r\nHost: x\r\nCookie: " + cookie
                           + b"\r\nContent-Type: application/x-www-form-urlencoded\r\n"
                           + b"Content-Length: %d\r\n\r\n" % len(body) + body)
            return int(answer.split(b" ", 2)[1])
    statuses = [sign_in("wrong", "127.0.0.3") for _ in range(7)]
    assert statuses[-1] == 429   # that address waits
    assert sign_in(server.admin_token, "127.0.0.1") == 303   # another does not


def _http(sock: socket.socket, request: bytes) -> bytes:
    sock.sendall(request)
    answer = b""
    while b"\r\n\r\n" not in answer:
        answer += sock.recv(65536)
    head, _, body = answer.partition(b"\r\n\r\n")
    length = int(re.search(rb"Content-Length: (\d+)", head, re.I).group(1))
    while len(body) < length:
        body += sock.recv(65536)
    return head + b"\r\n\r\n" + body


@pytest.mark.alone
def test_slow_clients_do_not_slow_the_others_behind_the_proxy(door, token):
    """32 clients sending a byte a second and reconnecting whenever they are
    cut; meanwhile another client's 200 getMe all answer, p99 under 1 s.
    (The same flood straight at gunicorn: scripts/bench frontdoor.)"""
    with slow_client_flood(door.port, clients=32) as flood:
        took = timed_get_me(door.base_url, token, calls=200, spacing=0.06)
        cuts = flood.cuts
    assert None not in took, f"{took.count(None)} of 200 getMe failed"
    assert percentile(took, 0.99) < 1.0, sorted(took)[-5:]
    assert cuts > 0   # the proxy cut the slow heads (10 s), and they came back


@pytest.mark.alone
def test_a_client_too_slow_is_cut_by_the_proxy(door):
    # nginx closes a timed-out request without an answer (its code terminates
    # such requests: docs/production.md); botsvc never sees it.
    with socket.create_connection(("127.0.0.1", door.port), timeout=30) as sock:
        sock.sendall(b"POST /v2/getMe HTTP/1.1\r\nHost: x\r\n")
        started = time.monotonic()
        try:
            assert sock.recv(1024) == b""
        except ConnectionResetError:
            pass
        assert time.monotonic() - started < 15
