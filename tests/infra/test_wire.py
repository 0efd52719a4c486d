"""The connection under the API, over real HTTP against scripts/server
(app/botsvc/connection/wire.py, app/botsvc/gunicorn_worker.py): what a client's next call on the same
kept-alive connection meets after a body the app did not read whole."""
from __future__ import annotations

import contextlib
import http.client
import itertools
import json
import select
import socket
import threading
import time

import pytest
import requests

from botsvc.devkit.owners import children, cpu_seconds, resident_bytes
from botsvc.devkit.servers import running_server

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


def assert_closed_after(answer) -> None:
    """The answer said so, and requests believed it: the session's next call
    goes on a new connection and works."""
    assert answer.headers["Connection"] == "close"


@pytest.mark.parametrize("size", [MiB + 1, 2 * MiB, 10 * MiB, 40 * MiB])
def test_a_json_body_over_1_mib_is_refused_and_the_next_call_works(session, size):
    for _ in range(2):   # twice on one session
        body = json_body(size)
        assert len(body) == size
        answer = session.post(f"{session.base}/sendMessage", data=body, timeout=60,
                              headers={"Content-Type": "application/json"})
        assert_too_large(answer, MiB)
        assert_closed_after(answer)     # the rest was not read
        get_me_answers(session)


def test_a_chunked_json_body_over_1_mib_is_refused_and_the_next_call_works(session):
    chunks = (b"x" * 65536 for _ in range(40))   # 2.5 MiB, no Content-Length
    answer = session.post(f"{session.base}/sendMessage", data=chunks, timeout=60,
                          headers={"Content-Type": "application/json"})
    assert_too_large(answer, MiB)
    assert_closed_after(answer)
    get_me_answers(session)


def test_an_upload_over_the_ceiling_is_refused_and_the_next_call_works(session):
    for size in (UPLOAD_MAX + 1, 4 * MiB):
        answer = session.post(f"{session.base}/uploadFile", timeout=60,
                              files={"file": ("big.bin", b"\0" * size)},
                              data={"type": "document"})
        assert_too_large(answer, UPLOAD_MAX)
        assert_closed_after(answer)
        get_me_answers(session)


def test_an_unauthorized_upload_is_refused_and_the_next_call_works(server, session):
    with requests.Session() as client:
        answer = client.post(f"{session.base}/uploadFile", timeout=60,
                             files={"file": ("big.bin", b"\0" * (2 * MiB))},
                             headers={"Authorization": "Bearer 1:nope"})
        assert answer.status_code == 401
        assert answer.json()["error_code"] == "UNAUTHORIZED"
        assert_closed_after(answer)
        answer = client.post(f"{session.base}/getMe", json={}, timeout=30,
                             headers=session.headers)
        assert answer.status_code == 200, answer.text


def test_a_refused_call_whose_small_body_has_arrived_keeps_the_connection(server, session):
    with socket.create_connection(("127.0.0.1", server.port), timeout=30) as sock:
        body = b'{"chat_id": "vc_x", "text": "hello"}'
        for _ in range(2):
            sock.sendall(b"POST /v2/sendMessage HTTP/1.1\r\nHost: x\r\n"
                         b"Authorization: Bearer 1:nope\r\nContent-Type: application/json\r\n"
                         b"Content-Length: %d\r\n\r\n%s" % (len(body), body))
            answer = http.client.HTTPResponse(sock)
            answer.begin()
            assert answer.status == 401
            assert json.loads(answer.read())["error_code"] == "UNAUTHORIZED"
            assert answer.getheader("Connection") == "keep-alive"
        token = session.headers["Authorization"]
        sock.sendall(b"POST /v2/getMe HTTP/1.1\r\nHost: x\r\nAuthorization: %s\r\n"
                     b"Content-Length: 0\r\n\r\n" % token.encode())
        answer = http.client.HTTPResponse(sock)
        answer.begin()
        assert answer.status == 200, answer.read()


# -- refused before the body is read (docs/connection.md) ---------------------------

def answer_to_head_alone(server, head: bytes) -> tuple[int, dict, dict]:
    """Send a request head that declares a body, and not one byte of the body:
    the answer must come, then the end of the connection."""
    with socket.create_connection(("127.0.0.1", server.port), timeout=10) as sock:
        sock.sendall(head)
        answer = http.client.HTTPResponse(sock)
        answer.begin()     # a server waiting for the body would time this out
        body = json.loads(answer.read())
        assert sock.recv(1) == b""   # closed, not waiting for the rest
        return answer.status, dict(answer.getheaders()), body


def declaring(target: str, length: int, authorization: str | None = None,
              content_type: str = "application/json") -> bytes:
    lines = [f"POST {target} HTTP/1.1", "Host: x", f"Content-Type: {content_type}",
             f"Content-Length: {length}"]
    if authorization:
        lines.append(f"Authorization: {authorization}")
    return ("\r\n".join(lines) + "\r\n\r\n").encode()


def test_calls_refused_early_are_answered_before_their_body_and_closed(server, session):
    token = session.headers["Authorization"]
    admin = f"Bearer {server.admin_token}"
    multipart = "multipart/form-data; boundary=x"
    cases = [
        (declaring("/v2/sendMessage", 100_000), 401, "UNAUTHORIZED"),
        (declaring("/v2/sendMessage", 100_000, "Bearer 1:nope"), 401, "UNAUTHORIZED"),
        (declaring("/v2/uploadFile", 50 * MiB, "Bearer 1:nope", multipart), 401,
         "UNAUTHORIZED"),
        (declaring("/v2/noSuchMethod", 100_000, token), 404, "METHOD_NOT_FOUND"),
        (declaring("/v2/sendMessage", MiB + 1, token), 413, "REQUEST_TOO_LARGE"),
        (declaring("/v2/uploadFile", UPLOAD_MAX + 1, token, multipart), 413,
         "REQUEST_TOO_LARGE"),
        (declaring("/manage/v1/createBot", 100_000, "Bearer wrong"), 401, "UNAUTHORIZED"),
        (declaring("/manage/v1/noSuchMethod", 100_000, admin), 404, "METHOD_NOT_FOUND"),
        (declaring("/manage/v1/createBot", MiB + 1, admin), 413, "REQUEST_TOO_LARGE"),
        (declaring("/download.php?id=x&exp=1&sig=x", 100_000), 405, "METHOD_NOT_ALLOWED"),
        (declaring("/sandbox/api/call", 100_000), 401, "UNAUTHORIZED"),
    ]
    for head, status, code in cases:
        got_status, headers, body = answer_to_head_alone(server, head)
        assert (got_status, body["error_code"]) == (status, code), (head, body)
        assert headers["Connection"] == "close"


# -- the request head (docs/connection.md) -----------------------------------------

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


def test_the_whole_head_has_a_limit(server):
    fits = ("POST /v2/getMe HTTP/1.1\r\nHost: x\r\nContent-Length: 0\r\n"
            + "".join(f"X-Fill-{i}: {'v' * 8000}\r\n" for i in range(8)) + "\r\n").encode()
    assert len(fits) < 65536
    assert raw_exchange(server, fits)[2]["error_code"] == "UNAUTHORIZED"
    past = fits[:-2] + b"X-Fill-8: " + b"v" * 8000 + b"\r\n\r\n"
    assert len(past) > 65536
    assert_refused(raw_exchange(server, past), 431, "HEADERS_TOO_LARGE", 65536)


def test_an_answer_to_a_head_past_a_limit_carries_its_request_id(server):
    head = b"POST /v2/getMe HTTP/1.1\r\nX-Request-Id: probe-431\r\n" \
        + b"".join(b"X-Fill-%d: v\r\n" % i for i in range(200)) + b"\r\n"
    status, headers, _ = raw_exchange(server, head)
    assert (status, headers["X-Request-Id"]) == (431, "probe-431")


def flood_head(port: int, first: bytes, repeated: bytes, cap: int) -> bytes:
    """Send ``first``, then ``repeated`` over and over (``cap`` bytes at most)
    while the server takes them; then read what it answered."""
    with socket.create_connection(("127.0.0.1", port), timeout=30) as sock:
        sent = 0
        try:
            sock.sendall(first)
            while sent < cap:
                sock.sendall(repeated)
                sent += len(repeated)
        except OSError:
            pass   # the server answered and closed: what it sent is still to read
        answer = b""
        with contextlib.suppress(OSError):
            while chunk := sock.recv(65536):
                answer += chunk
        return answer


@pytest.fixture(scope="module")
def one_worker(tmp_path_factory):
    with running_server(tmp_path_factory.mktemp("one-worker"), BOTSVC_WORKERS="1") as started:
        yield started


@pytest.mark.parametrize("first, repeated, status", [
    (b"GET /", b"a" * 65536, b"414"),                                   # a 64 MiB request line
    (b"GET /healthz HTTP/1.1\r\n", b"X-A: b\r\n" * 8192, b"431"),      # fields without end
    (b"GET /healthz HTTP/1.1\r\nX-A: ", b"b" * 65536, b"431"),          # one field without end
])
def test_a_head_without_end_costs_the_worker_little(one_worker, first, repeated, status):
    [worker] = children(one_worker.process.pid)
    requests.get(f"{one_worker.base_url}/healthz", timeout=30)   # warmed up
    cpu, memory = cpu_seconds(worker), resident_bytes(worker)
    answer = flood_head(one_worker.port, first, repeated, cap=64 * MiB)
    assert answer.startswith(b"HTTP/1.1 " + status + b" "), answer[:200]
    time.sleep(0.5)   # the worker is done with it
    # Generous bounds, on the worker's own CPU time: the head is refused
    # where it crosses a limit, having cost a scan of what arrived (the
    # parser gunicorn has used 25 s of CPU and 130 MiB on a 16 MiB line).
    assert cpu_seconds(worker) - cpu < 1.0
    assert resident_bytes(worker) - memory < 16 * MiB


# -- slow clients (app/botsvc/gunicorn_worker.py) ------------------------------------------

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


@pytest.mark.alone
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
