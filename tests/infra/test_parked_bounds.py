"""Parked bodies, whatever their framing, within bounds
(app/botsvc/connection/spool.py, app/botsvc/connection/chunked.py): a chunked
body parks and is served whole; one over its limit, a token past its bound of
parked requests or bytes, and a body that would take the disk below its
reserve are each refused whole, in the envelope, before the body fills
anything; other calls go on being answered. Real gunicorn, raw sockets, a
small tmpfs for the disk."""
from __future__ import annotations

import http.client
import json
import os
import select
import socket
import time

import pytest
import requests

from botsvc.devkit.servers import running_server, suite_server
from tests.infra.test_slow_bodies import chunk, slow_body_head
from tests.support.small_disk import small_tmpfs

pytestmark = pytest.mark.server


def answer_of(sock: socket.socket) -> tuple[http.client.HTTPResponse, dict]:
    answer = http.client.HTTPResponse(sock)
    answer.begin()
    return answer, json.loads(answer.read())


def parked(port: int, head: bytes, first: bytes) -> socket.socket:
    """A connection that sent ``head`` and the start of its body, and waits."""
    sock = socket.create_connection(("127.0.0.1", port), timeout=30)
    sock.sendall(head + first)
    return sock


def get_me(server, token: str) -> requests.Response:
    return requests.post(f"{server.base_url}/v2/getMe", json={}, timeout=5,
                         headers={"Authorization": f"Bearer {token}"})


def test_a_parked_chunked_body_is_served_whole_and_the_connection_kept(tmp_path):
    with running_server(tmp_path, BOTSVC_WORKERS="1", BOTSVC_THREADS="1") as server:
        token = server.operator("createBot", username="chunked_bot")["token"]
        body = json.dumps({"text": "x" * 150_000}).encode()   # past the spool's memory
        with parked(server.port, slow_body_head(token, None, "getMe"), chunk(body[:10])) as sock:
            time.sleep(0.5)                   # the app has tried, and parked it
            assert get_me(server, token).status_code == 200   # the one thread is free
            for start in range(10, len(body), 40_000):
                sock.sendall(chunk(body[start:start + 40_000]))
                time.sleep(0.1)
            sock.sendall(b"0\r\n\r\n")
            answer, refused = answer_of(sock)
            # getMe takes no parameters: the whole body was read and validated.
            assert answer.status == 400, refused
            assert (refused["error_code"], refused["parameters"]) == (
                "INVALID_PARAMETER", {"field": "text"}), refused
            assert answer.getheader("Connection") != "close"
            # Nothing of the next request was taken with the body.
            sock.sendall(slow_body_head(token, 2, "getMe") + b"{}")
            answer, answered = answer_of(sock)
            assert answer.status == 200 and answered["ok"] is True, answered


def test_a_chunked_json_body_over_1_mib_is_refused_whole(tmp_path):
    with running_server(tmp_path, BOTSVC_WORKERS="1", BOTSVC_THREADS="1") as server:
        token = server.operator("createBot", username="chunked_large_bot")["token"]
        piece = chunk(b" " * 65_536)
        with parked(server.port, slow_body_head(token, None), piece) as sock:
            for _ in range(17):               # 18 pieces of 64 KiB: past 1 MiB
                sock.sendall(piece)
            answer, refused = answer_of(sock)
        assert answer.status == 413, refused
        assert refused == {"ok": False, "error_code": "REQUEST_TOO_LARGE",
                           "description": "Request body is larger than 1048576 bytes",
                           "parameters": {"limit": 1048576}}
        assert answer.getheader("Connection") == "close"
        assert get_me(server, token).status_code == 200


# Alone: it counts on three parked requests within 0.3 s.
@pytest.mark.alone
def test_a_token_past_its_bound_of_parked_requests_is_refused_and_its_calls_go_on(tmp_path):
    with running_server(tmp_path, BOTSVC_WORKERS="1", BOTSVC_THREADS="2",
                        BOTSVC_SPOOL_TOKEN_MAX_REQUESTS="2") as server:
        token = server.operator("createBot", username="bound_bot")["token"]
        other = server.operator("createBot", username="other_bot")["token"]
        head = slow_body_head(token)
        held = [parked(server.port, head, b" ") for _ in range(3)]
        try:
            time.sleep(0.3)
            # Past the bound a request still parks, for a second: a small
            # body sent apart from its head gets through.
            assert get_me(server, token).status_code == 200
            assert get_me(server, other).status_code == 200
            # The one past the bound is whichever the worker read third: the
            # order connections are taken in is not the order they were made.
            answered, _, _ = select.select(held, [], [], 5)
            assert len(answered) == 1, answered
            answer, refused = answer_of(answered[0])
            assert answer.status == 429, refused
            assert refused["error_code"] == "RATE_LIMITED"
            assert refused["parameters"] == {"retry_after": 1}
            assert answer.getheader("Retry-After") == "1"
            for sock in held:                        # the other two are still parked
                if sock is not answered[0]:
                    sock.settimeout(0.2)
                    with pytest.raises(TimeoutError):
                        sock.recv(1)
        finally:
            for sock in held:
                sock.close()


def test_bytes_past_the_token_bound_are_refused_before_they_are_read(tmp_path):
    with running_server(tmp_path, BOTSVC_WORKERS="1", BOTSVC_THREADS="2",
                        BOTSVC_SPOOL_TOKEN_MAX_BYTES="300000") as server:
        token = server.operator("createBot", username="bytes_bot")["token"]
        other = server.operator("createBot", username="other_bytes_bot")["token"]
        with parked(server.port, slow_body_head(token, 200_000), b" ") as first:
            time.sleep(0.3)
            with parked(server.port, slow_body_head(token, 200_000), b" ") as second:
                answer, refused = answer_of(second)
            with parked(server.port, slow_body_head(other, 200_000), b" ") as others:
                time.sleep(0.3)
                others.sendall(b" " * 199_999)          # its own share: parked, then served
                answer_others, validated = answer_of(others)
            first.settimeout(0.2)
            with pytest.raises(TimeoutError):
                first.recv(1)
        assert answer.status == 503, refused
        assert (refused["error_code"], refused["parameters"]) == ("STORAGE_FULL", {}), refused
        assert answer.getheader("Connection") == "close"
        assert answer_others.status == 400 and validated["error_code"] == "INVALID_JSON", validated


def test_slow_uploads_never_take_a_small_disk_below_its_reserve(tmp_path):
    """Uploads that each send most of their body at once, then trickle: those
    the disk has room for park; the rest are refused 503 STORAGE_FULL before
    their body is read, and free space never goes below the reserve."""
    reserve, declared = 16 * 1024 * 1024, 6 * 1024 * 1024
    with small_tmpfs(tmp_path, "48m") as mount:
        server = suite_server(mount / "data", BOTSVC_WORKERS="1", BOTSVC_THREADS="2",
                              BOTSVC_MIN_FREE_BYTES=str(reserve)).start()
        try:
            token = server.operator("createBot", username="disk_bot")["token"]
            free_at_start = os.statvfs(mount).f_bavail * os.statvfs(mount).f_frsize
            head = (f"POST /v2/uploadFile HTTP/1.1\r\nHost: x\r\nAuthorization: Bearer {token}\r\n"
                    "Content-Type: multipart/form-data; boundary=b\r\n"
                    f"Content-Length: {declared}\r\n\r\n").encode()
            uploads, lowest, answers = [], free_at_start, []
            for _ in range(6):
                sock = parked(server.port, head, b"--b\r\n")
                sock.settimeout(0.3)
                try:
                    sock.sendall(b" " * (declared - 1024))
                except OSError:
                    pass                             # refused, and closed
                uploads.append(sock)
                lowest = min(lowest, os.statvfs(mount).f_bavail * os.statvfs(mount).f_frsize)
            for sock in uploads:
                sock.settimeout(2)
                try:
                    answers.append(answer_of(sock))
                except TimeoutError:
                    answers.append(None)             # parked: its body is not whole
            lowest = min(lowest, os.statvfs(mount).f_bavail * os.statvfs(mount).f_frsize)
        finally:
            for sock in uploads:
                sock.close()
            server.stop()
    assert lowest >= reserve, (lowest, reserve)
    refusals = [refused for answer in answers if answer for refused in [answer[1]]]
    assert refusals and all(
        refused["error_code"] == "STORAGE_FULL" for refused in refusals), refusals
    assert answers.count(None) >= 1, answers        # at least one was let park
