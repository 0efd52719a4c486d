"""A parked request served again from its first byte leaves exactly one
effect, on every route family (docs/DEVELOPING.md, "Nothing is written before
the body is read"; app/botsvc/write_guard.py holds the rule in every test that
sends a body). One write-bearing request of each family is sent with its body
held back until the app has read it and parked it, then completed; each one's
effect is counted once it has been answered. The download route never reads
a body: it answers at once, and is never parked."""
from __future__ import annotations

import http.client
import json
import re
import socket
import time

import pytest
import requests

from botsvc.devkit.servers import running_server

pytestmark = pytest.mark.server

PAGE_TOKEN = re.compile(r'<meta name="csrf-token" content="([^"]+)">')
FORM_TOKEN = re.compile(r'name="csrf_token" value="([^"]+)"')


@pytest.fixture(scope="module")
def server(tmp_path_factory):
    with running_server(tmp_path_factory.mktemp("rerun"), BOTSVC_WORKERS="1",
                        BOTSVC_THREADS="2", BOTSVC_CALL_LOG="1") as started:
        yield started


@pytest.fixture(scope="module")
def chat(server):
    created = server.operator("createBot", username="rerun_bot")
    user_id = server.operator("createUser")["user_id"]
    started = server.operator("userStart", user_id=user_id, bot_id=created["bot"]["id"])
    return {"token": created["token"], "bot_id": created["bot"]["id"], "user_id": user_id,
            "chat_id": started["chat_id"]}


def parked_then_whole(server, path: str, headers: dict, params: dict) -> tuple[int, dict]:
    """POST ``params`` as JSON, its body held back until the app has tried to
    read it (and parked the request), then sent whole."""
    body = json.dumps(params).encode()
    head = "".join(f"{name}: {value}\r\n" for name, value in headers.items())
    with socket.create_connection(("127.0.0.1", server.port), timeout=30) as sock:
        sock.sendall(f"POST {path} HTTP/1.1\r\nHost: x\r\n{head}Content-Type: application/json"
                     f"\r\nContent-Length: {len(body)}\r\n\r\n".encode() + body[:5])
        time.sleep(0.5)
        sock.sendall(body[5:])
        answer = http.client.HTTPResponse(sock)
        answer.begin()
        return answer.status, json.loads(answer.read())


def texts(server, chat) -> list[str]:
    seen = server.operator("userGetChat", user_id=chat["user_id"], bot_id=chat["bot_id"])
    return [message.get("text") for message in seen["messages"]]


def test_a_bot_api_call_parked_and_run_again_sends_once(server, chat):
    status, answer = parked_then_whole(
        server, "/v2/sendMessage", {"Authorization": f"Bearer {chat['token']}"},
        {"chat_id": chat["chat_id"], "text": "parked v2"})
    assert status == 200 and answer["result"]["text"] == "parked v2", answer
    assert texts(server, chat).count("parked v2") == 1
    time.sleep(0.5)   # records of calls side by side are written in batches
    calls = server.operator("getBotCalls", bot_id=chat["bot_id"])["calls"]
    assert [call["method"] for call in calls].count("sendMessage") == 1, calls


def test_an_operator_call_parked_and_run_again_creates_once(server):
    status, answer = parked_then_whole(server, "/manage/v1/createBot", server.admin_headers,
                                       {"username": "parked_operator_bot"})
    assert status == 200 and answer["result"]["bot"]["username"] == "parked_operator_bot"
    bots = server.operator("listBots")
    assert [bot["username"] for bot in bots].count("parked_operator_bot") == 1


def test_a_sandbox_call_parked_and_run_again_sends_once(server, chat):
    with requests.Session() as browser:
        form = browser.get(f"{server.base_url}/sandbox/signin", timeout=10).text
        browser.post(f"{server.base_url}/sandbox/signin", timeout=10, data={
            "csrf_token": FORM_TOKEN.search(form).group(1), "token": server.admin_token})
        page = browser.get(f"{server.base_url}/sandbox/chats", timeout=10).text
        csrf = PAGE_TOKEN.search(page).group(1)
        cookie = "; ".join(f"{name}={value}" for name, value in browser.cookies.items())
    status, answer = parked_then_whole(
        server, "/sandbox/api/userSendMessage", {"Cookie": cookie, "X-CSRF-Token": csrf},
        {"user_id": chat["user_id"], "bot_id": chat["bot_id"], "text": "parked sandbox"})
    assert status == 200 and answer["result"]["text"] == "parked sandbox", answer
    assert texts(server, chat).count("parked sandbox") == 1


def test_the_download_route_answers_without_its_body_and_is_never_parked(server, chat):
    stored = requests.post(f"{server.base_url}/v2/uploadFile", timeout=30,
                           files={"file": ("notes.txt", b"some notes\n")},
                           headers={"Authorization": f"Bearer {chat['token']}"}).json()
    file_id = stored["result"]["file_id"]
    with socket.create_connection(("127.0.0.1", server.port), timeout=10) as sock:
        sock.sendall(f"GET /download.php?file_id={file_id} HTTP/1.1\r\nHost: x\r\n"
                     f"Authorization: Bearer {chat['token']}\r\n"
                     "Content-Length: 100000\r\n\r\n".encode() + b" " * 10)
        answer = http.client.HTTPResponse(sock)
        answer.begin()                   # with 99,990 bytes of its body never sent
        assert (answer.status, answer.read()) == (200, b"some notes\n")
        assert answer.getheader("Connection") == "close"
