"""Slow bodies hold no thread (app/botsvc/connection/body.py, app/botsvc/gunicorn_worker.py):
straight at gunicorn, with no front door, clients that send a valid token's
request and then its body slowly, reconnecting whenever they are answered or
cut, leave every other call answered promptly; and a parked body, once
whole, is served as if it had come at once."""
from __future__ import annotations

import http.client
import json
import select
import socket
import threading
import time

import pytest
import requests

from botsvc.devkit.servers import running_server
from botsvc.devkit.slow_clients import percentile, timed_get_me

pytestmark = [pytest.mark.server, pytest.mark.alone]   # how long a body takes is the test

BODY_BYTES = 100_000


def slow_body_head(token: str, length: int | None = BODY_BYTES,
                   method: str = "sendMessage") -> bytes:
    """A call's head; ``length`` None: its body is chunked."""
    framing = ("Transfer-Encoding: chunked" if length is None
               else f"Content-Length: {length}")
    return (f"POST /v2/{method} HTTP/1.1\r\nHost: x\r\nAuthorization: Bearer {token}\r\n"
            f"Content-Type: application/json\r\n{framing}\r\n\r\n").encode()


def chunk(data: bytes) -> bytes:
    return b"%x\r\n%s\r\n" % (len(data), data)


class SlowBodies:
    """``clients`` connections sending ``head`` then ``rate`` bytes a second
    (in 10 steps a second; in chunks of that size when ``chunked``), each
    reconnecting when answered or cut."""

    def __init__(self, port: int, head: bytes, clients: int, rate: int, chunked: bool = False):
        self.port, self.head, self.rate, self.chunked = port, head, rate, chunked
        self.stopping = threading.Event()
        self.cuts = 0
        self.threads = [threading.Thread(target=self._trickle, daemon=True)
                        for _ in range(clients)]

    def _trickle(self) -> None:
        step = max(1, self.rate // 10)
        pause = step / self.rate
        while not self.stopping.is_set():
            try:
                with socket.create_connection(("127.0.0.1", self.port), timeout=5,
                                              source_address=("127.0.0.2", 0)) as sock:
                    sock.sendall(self.head)
                    while not self.stopping.is_set():
                        if select.select([sock], [], [], pause)[0]:
                            break   # answered or cut
                        sock.sendall(chunk(b" " * step) if self.chunked else b" " * step)
            except OSError:
                time.sleep(0.05)
            if not self.stopping.is_set():
                self.cuts += 1

    def __enter__(self):
        for thread in self.threads:
            thread.start()
        return self

    def __exit__(self, *exc):
        self.stopping.set()
        for thread in self.threads:
            thread.join(timeout=10)


def test_slow_bodies_with_a_valid_token_hold_no_thread(tmp_path):
    with running_server(tmp_path, BOTSVC_WORKERS="2", BOTSVC_THREADS="4") as server:
        token = server.operator("createBot", username="trickle_bot")["token"]
        head = slow_body_head(token)
        with SlowBodies(server.port, head, 16, 1), SlowBodies(server.port, head, 16, 600):
            time.sleep(2)    # they hold what they can before the timed calls
            took = timed_get_me(server.base_url, token, calls=200, spacing=0.05)
        answered = [seconds for seconds in took if seconds is not None]
        assert len(answered) == 200, f"{200 - len(answered)} of 200 getMe failed"
        assert percentile(answered, 0.99) < 1.0, sorted(answered)[-5:]


def test_slow_chunked_bodies_with_a_valid_token_hold_no_thread(tmp_path):
    """Chunked bodies park as bodies of declared length do: the token's own
    getMe is answered beside them (past the token's bound of parked requests,
    a small body still parks, for a second: app/botsvc/connection/spool.py)."""
    with running_server(tmp_path, BOTSVC_WORKERS="2", BOTSVC_THREADS="4",
                        BOTSVC_SPOOL_TOKEN_MAX_REQUESTS="4") as server:
        token = server.operator("createBot", username="chunk_trickle_bot")["token"]
        head = slow_body_head(token, None)
        with SlowBodies(server.port, head, 16, 600, chunked=True):
            time.sleep(1)
            took = timed_get_me(server.base_url, token, calls=100, spacing=0.05)
        answered = [seconds for seconds in took if seconds is not None]
        assert len(answered) == 100, f"{100 - len(answered)} of 100 getMe failed"
        assert percentile(answered, 0.99) < 1.0, sorted(answered)[-5:]


def test_a_parked_body_is_served_whole_once_it_has_arrived(tmp_path):
    with running_server(tmp_path, BOTSVC_WORKERS="1", BOTSVC_THREADS="1") as server:
        created = server.operator("createBot", username="parked_bot")
        body = json.dumps({"text": "x" * 150_000}).encode()   # past the spool's memory
        with socket.create_connection(("127.0.0.1", server.port), timeout=30) as sock:
            for _ in range(2):     # twice on one kept-alive connection
                sock.sendall(slow_body_head(created["token"], len(body)).replace(
                    b"sendMessage", b"getMe") + body[:10])
                time.sleep(0.5)             # the app has tried, and parked it
                # Meanwhile the worker's only thread serves others.
                answer = requests.post(f"{server.base_url}/v2/getMe", json={}, timeout=5,
                                       headers={"Authorization": f"Bearer {created['token']}"})
                assert answer.status_code == 200
                for start in range(10, len(body), 40_000):
                    sock.sendall(body[start:start + 40_000])
                    time.sleep(0.1)
                answer = http.client.HTTPResponse(sock)
                answer.begin()
                # getMe takes no parameters: the whole body was read and validated.
                refused = json.loads(answer.read())
                assert answer.status == 400, refused
                assert (refused["error_code"], refused["parameters"]) == (
                    "INVALID_PARAMETER", {"field": "text"}), refused
                assert answer.getheader("Connection") != "close"


def test_a_slow_upload_is_parked_then_stored_whole(tmp_path):
    with running_server(tmp_path, BOTSVC_WORKERS="1", BOTSVC_THREADS="1") as server:
        token = server.operator("createBot", username="upload_bot")["token"]
        content = b"a line of notes\n" * 12_000        # 192 kB: spooled to a file
        prepared = requests.Request(
            "POST", f"{server.base_url}/v2/uploadFile", files={"file": ("notes.txt", content)},
            headers={"Authorization": f"Bearer {token}"}).prepare()
        head = (f"POST /v2/uploadFile HTTP/1.1\r\nHost: x\r\n"
                f"Authorization: Bearer {token}\r\n"
                f"Content-Type: {prepared.headers['Content-Type']}\r\n"
                f"Content-Length: {len(prepared.body)}\r\n\r\n").encode()
        with socket.create_connection(("127.0.0.1", server.port), timeout=60) as sock:
            sock.sendall(head + prepared.body[:1000])
            time.sleep(0.5)
            answer = requests.post(f"{server.base_url}/v2/getMe", json={}, timeout=5,
                                   headers={"Authorization": f"Bearer {token}"})
            assert answer.status_code == 200    # the one thread is free
            for start in range(1000, len(prepared.body), 50_000):
                sock.sendall(prepared.body[start:start + 50_000])
                time.sleep(0.1)
            answer = http.client.HTTPResponse(sock)
            answer.begin()
            stored = json.loads(answer.read())
        assert answer.status == 200, stored
        assert stored["result"]["file_size"] == len(content), stored


def test_a_parked_call_takes_its_injected_fault_once(tmp_path):
    """Taking an injected fault writes, before the body is read: a call whose
    body has not all arrived parks before that write, so when it runs again
    whole it takes the fault once, and the bot's next call gets the second."""
    with running_server(tmp_path, BOTSVC_WORKERS="1", BOTSVC_THREADS="1",
                        BOTSVC_TEST_TOOLS="1", BOTSVC_CALL_LOG="1") as server:
        created = server.operator("createBot", username="parked_fault_bot")
        bot_id = created["bot"]["id"]
        # A delay alone: the call goes on to read its body (an injected error
        # would answer before it).
        injected = requests.post(f"{server.base_url}/manage/v1/injectFault", timeout=5,
                                 headers=server.admin_headers,
                                 json={"bot_id": bot_id, "method": "sendMessage",
                                       "delay_ms": 10, "count": 2})
        assert injected.json() == {"ok": True, "result": True}
        body = json.dumps({"chat_id": "vc_" + "0" * 40, "text": "hi"}).encode() + b" " * 100_000
        with socket.create_connection(("127.0.0.1", server.port), timeout=30) as sock:
            sock.sendall(slow_body_head(created["token"], len(body)) + body[:10])
            time.sleep(0.5)             # the app has tried, and parked it
            sock.sendall(body[10:])
            answer = http.client.HTTPResponse(sock)
            answer.begin()
            assert json.loads(answer.read())["error_code"] == "CHAT_NOT_FOUND"
        second = requests.post(f"{server.base_url}/v2/sendMessage", timeout=5,
                               headers={"Authorization": f"Bearer {created['token']}"},
                               json={"chat_id": "vc_" + "0" * 40, "text": "again"})
        assert second.json()["error_code"] == "CHAT_NOT_FOUND"
        time.sleep(0.5)   # records of calls side by side are written in batches
        calls = server.operator("getBotCalls", bot_id=bot_id, detail=True)["calls"]
        assert [call.get("injected") for call in calls] == [{"delay_ms": 10}] * 2, calls
