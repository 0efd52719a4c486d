"""The connection under the API, over real HTTP against scripts/server
(app/wire.py, app/gunicorn_worker.py): what a client's next call on the same
kept-alive connection meets after a body the app did not read whole."""
from __future__ import annotations

import http.client
import itertools
import json
import select
import socket
import threading
import time

import pytest
import requests

from tests.support.servers import running_server

pytestmark = pytest.mark.server

UPLOAD_MAX = 256 * 1024
MiB = 1024 * 1024
_names = itertools.count(1)


@pytest.fixture(scope="module")
def server(tmp_path_factory):
    with running_server(tmp_path_factory.mktemp("wire"),
                        BOTSVC_UPLOAD_MAX_BYTES=str(UPLOAD_MAX)) as started:
        yield started


@pytest.fixture
def session(server):
    created = server.operator("createBot", username=f"wire{next(_names)}_bot")
    with requests.Session() as client:
        client.headers["Authorization"] = f"Bearer {created['token']}"
        client.base = f"{server.base_url}/v2"
        yield client


def get_me_answers(session) -> None:
    answer = session.post(f"{session.base}/getMe", json={}, timeout=30)
    assert answer.status_code == 200, answer.text
    assert answer.json()["ok"] is True


def assert_too_large(answer, limit: int) -> None:
    assert answer.status_code == 413, answer.text
    assert answer.json() == {"ok": False, "error_code": "REQUEST_TOO_LARGE",
                             "description": f"Request body is larger than {limit} bytes",
                             "parameters": {"limit": limit}}


def json_body(size: int) -> bytes:
    text = json.dumps({"chat_id": "vc_x", "text": ""})
    return (text[:-2] + "x" * (size - len(text)) + '"}').encode()


@pytest.mark.parametrize("size", [MiB + 1, 2 * MiB, 10 * MiB])
def test_a_json_body_over_1_mib_leaves_the_connection_usable(session, size):
    for _ in range(2):   # twice: the connection the 413 came on serves the next call
        body = json_body(size)
        assert len(body) == size
        answer = session.post(f"{session.base}/sendMessage", data=body, timeout=60,
                              headers={"Content-Type": "application/json"})
        assert_too_large(answer, MiB)
        # The rest was read and discarded: the connection stays open.
        assert answer.headers["Connection"] == "keep-alive"
        get_me_answers(session)


def test_a_chunked_json_body_over_1_mib_leaves_the_connection_usable(session):
    chunks = (b"x" * 65536 for _ in range(40))   # 2.5 MiB, no Content-Length
    answer = session.post(f"{session.base}/sendMessage", data=chunks, timeout=60,
                          headers={"Content-Type": "application/json"})
    assert_too_large(answer, MiB)
    get_me_answers(session)


def test_a_body_past_the_drain_bound_closes_the_connection_and_says_so(session):
    answer = session.post(f"{session.base}/sendMessage", data=json_body(40 * MiB), timeout=60,
                          headers={"Content-Type": "application/json"})
    assert_too_large(answer, MiB)
    assert answer.headers["Connection"] == "close"
    get_me_answers(session)   # on a new connection: requests believed the header


def test_an_upload_over_the_ceiling_leaves_the_connection_usable(session):
    for size in (UPLOAD_MAX + 1, 4 * MiB):
        answer = session.post(f"{session.base}/uploadFile", timeout=60,
                              files={"file": ("big.bin", b"\0" * size)},
                              data={"type": "document"})
        assert_too_large(answer, UPLOAD_MAX)
        assert answer.headers["Connection"] == "keep-alive"
        get_me_answers(session)


def test_an_unauthorized_upload_leaves_the_connection_usable(server, session):
    # Refused before the body is read at all.
    answer = requests.post(f"{session.base}/uploadFile", timeout=60,
                           files={"file": ("big.bin", b"\0" * (2 * MiB))},
                           headers={"Authorization": "Bearer 1:nope"})
    assert answer.status_code == 401
    with requests.Session() as client:
        answer = client.post(f"{session.base}/uploadFile", timeout=60,
                             files={"file": ("big.bin", b"\0" * (2 * MiB))},
                             headers={"Authorization": "Bearer 1:nope"})
        assert answer.json()["error_code"] == "UNAUTHORIZED"
        assert answer.headers["Connection"] == "keep-alive"
        answer = client.post(f"{session.base}/getMe", json={}, timeout=30,
                             headers=session.headers)
        assert answer.status_code == 200, answer.text


# -- the request head (docs/connection.md) ----------------------------------------

def raw_exchange(server, head: bytes) -> tuple[int, dict, dict | bytes]:
    """Send ``head`` (a request without a body) and read the one answer."""
    with socket.create_connection(("127.0.0.1", server.port), timeout=30) as sock:
        sock.sendall(head)
        answer = http.client.HTTPResponse(sock)
        answer.begin()
        body = answer.read()
        content_type = answer.getheader("Content-Type") or ""
        return (answer.status, dict(answer.getheaders()),
                json.loads(body) if content_type == "application/json" else body)


def head_of(target: str = "/v2/getMe", line_length: int | None = None, fields: int = 2,
            field_length: int | None = None) -> bytes:
    """POST ``target`` (padded with a query to ``line_length`` bytes of request
    line), with ``fields`` header fields: Host, Content-Length and fillers, the
    last one padded to ``field_length`` bytes ("Name: value")."""
    if line_length is not None:
        bare = len(f"POST {target}?p= HTTP/1.1")
        target += "?p=" + "a" * (line_length - bare)
    lines = [f"POST {target} HTTP/1.1", "Host: 127.0.0.1", "Content-Length: 0"]
    lines += [f"X-Fill-{i}: v" for i in range(fields - 2)]
    if field_length is not None:
        lines.append("X-Long: " + "v" * (field_length - len("X-Long: ")))
    assert line_length is None or len(lines[0]) == line_length
    return ("\r\n".join(lines) + "\r\n\r\n").encode()


def assert_refused(answer, status: int, code: str, limit: int) -> None:
    got_status, headers, body = answer
    assert (got_status, headers["Content-Type"]) == (status, "application/json"), body
    assert body["ok"] is False
    assert (body["error_code"], body["parameters"]) == (code, {"limit": limit})


def test_the_request_line_limit_answers_in_the_envelope(server):
    # At the limit: the request reaches the method (and its token check).
    assert raw_exchange(server, head_of(line_length=8190))[2]["error_code"] == "UNAUTHORIZED"
    assert_refused(raw_exchange(server, head_of(line_length=8191)), 414, "URI_TOO_LONG", 8190)
    # Past what gunicorn itself parses (1 MiB): botsvc's worker answers the same.
    assert_refused(raw_exchange(server, head_of(line_length=2 * MiB)), 414, "URI_TOO_LONG",
                   8190)


def test_a_header_field_limit_answers_in_the_envelope(server):
    fits = raw_exchange(server, head_of(field_length=8190))
    assert fits[2]["error_code"] == "UNAUTHORIZED"
    assert_refused(raw_exchange(server, head_of(field_length=8191)), 431,
                   "HEADERS_TOO_LARGE", 8190)
    assert_refused(raw_exchange(server, head_of(field_length=100_000)), 431,
                   "HEADERS_TOO_LARGE", 8190)


def test_the_header_count_limit_answers_in_the_envelope(server):
    assert raw_exchange(server, head_of(fields=100))[2]["error_code"] == "UNAUTHORIZED"
    assert_refused(raw_exchange(server, head_of(fields=101)), 431, "HEADERS_TOO_LARGE", 100)
    assert_refused(raw_exchange(server, head_of(fields=2000)), 431, "HEADERS_TOO_LARGE", 100)


# -- slow clients (app/gunicorn_worker.py) ------------------------------------------

def trickle(port: int, head: bytes, outcome: list) -> None:
    """A client that sends ``head`` and then one byte a second, never done;
    it keeps what the server answers (b"" when it was cut; None when it is
    still held after a minute)."""
    with socket.create_connection(("127.0.0.1", port), timeout=30) as sock:
        sock.sendall(head)
        deadline = time.monotonic() + 60
        while time.monotonic() < deadline:
            if select.select([sock], [], [], 1.0)[0]:
                received = b""
                try:
                    while chunk := sock.recv(65536):
                        received += chunk
                except OSError:
                    pass
                outcome.append(received)
                return
            try:
                sock.sendall(b"x")
            except OSError:
                outcome.append(b"")
                return
        outcome.append(None)   # still held after a minute


def timed_out(answer: bytes) -> bool:
    head, _, body = answer.partition(b"\r\n\r\n")
    return (head.startswith(b"HTTP/1.1 408 ") and b"Connection: close" in head
            and json.loads(body)["error_code"] == "REQUEST_TIMEOUT")


def test_slow_clients_do_not_stall_the_service(tmp_path):
    with running_server(tmp_path, BOTSVC_WORKERS="1", BOTSVC_THREADS="2") as slow_server:
        token = slow_server.operator("createBot", username="patient_bot")["token"]
        slow_body = (f"POST /v2/sendMessage HTTP/1.1\r\nHost: x\r\nAuthorization: Bearer {token}"
                     "\r\nContent-Type: application/json\r\nContent-Length: 300\r\n\r\n{").encode()
        slow_head = b"POST /v2/getMe HTTP/1.1\r\nHost: x\r\nX-Slow: "
        outcomes: list[list] = [[] for _ in range(8)]
        clients = [threading.Thread(target=trickle, daemon=True,
                                    args=(slow_server.port, slow_body if i < 6 else slow_head,
                                          outcomes[i])) for i in range(8)]
        for client in clients:
            client.start()
        time.sleep(1)   # they hold the worker's two threads and queue behind them
        for _ in range(5):
            answer = requests.post(f"{slow_server.base_url}/v2/getMe", json={}, timeout=30,
                                   headers={"Authorization": f"Bearer {token}"})
            assert answer.status_code == 200, answer.text
        for client in clients:
            client.join(timeout=70)
        # Each slow one was answered 408 in the envelope, its connection
        # closed: by the app (a slow body) or by the worker (a slow head).
        for [answer] in outcomes:
            assert answer is not None and timed_out(answer), answer
