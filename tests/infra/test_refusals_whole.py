"""A refusal that closes the connection arrives whole (app/botsvc/connection/sockets.py,
``Lingering``): the worker sends the answer, half-closes, and reads and drops
what the client still sends for a bounded time, so that the client reads the
full envelope rather than a reset, even while it is still sending."""
from __future__ import annotations

import json
import socket
import threading

import pytest

from botsvc.devkit.servers import running_server

pytestmark = pytest.mark.server

MiB = 1024 * 1024
ROUNDS = 20


@pytest.fixture(scope="module")
def server(tmp_path_factory):
    with running_server(tmp_path_factory.mktemp("refusals"),
                        BOTSVC_UPLOAD_MAX_BYTES=str(256 * 1024)) as started:
        yield started


def keep_sending(sock: socket.socket, stop: threading.Event) -> None:
    chunk = b"x" * 65536
    try:
        while not stop.is_set():
            sock.sendall(chunk)
    except OSError:
        pass    # the server stopped reading and closed: expected


def answer_while_sending(port: int, head: bytes) -> bytes:
    """Send ``head``, then bytes without pause; everything read until the end."""
    with socket.create_connection(("127.0.0.1", port), timeout=20) as sock:
        sock.sendall(head)
        stop = threading.Event()
        sender = threading.Thread(target=keep_sending, args=(sock, stop), daemon=True)
        sender.start()
        received = b""
        try:
            while chunk := sock.recv(65536):
                received += chunk
        finally:
            stop.set()
            sender.join(timeout=20)
        return received


def envelope(answer: bytes) -> tuple[int, str, dict]:
    head, _, payload = answer.partition(b"\r\n\r\n")
    lines = head.split(b"\r\n")
    status = int(lines[0].split()[1])
    fields = dict(line.decode().split(": ", 1) for line in lines[1:])
    assert fields["Connection"] == "close"
    assert len(payload) == int(fields["Content-Length"]), answer   # whole, not cut
    body = json.loads(payload)
    assert body["ok"] is False
    return status, body["error_code"], body["parameters"]


def post_head(target: str, length: int, authorization: str, content_type: str) -> bytes:
    return (f"POST {target} HTTP/1.1\r\nHost: x\r\nAuthorization: {authorization}\r\n"
            f"Content-Type: {content_type}\r\nContent-Length: {length}\r\n\r\n").encode()


def test_refusals_that_close_arrive_whole_while_the_client_still_sends(server):
    token = server.operator("createBot", username="refused_bot")["token"]
    cases = [
        (post_head("/v2/sendMessage", 8 * MiB, "Bearer 1:nope", "application/json"),
         (401, "UNAUTHORIZED", {})),
        (post_head("/v2/sendMessage", 8 * MiB, f"Bearer {token}", "application/json"),
         (413, "REQUEST_TOO_LARGE", {"limit": MiB})),
        # A head that never ends, past the limit of one header field.
        (b"POST /v2/getMe HTTP/1.1\r\nHost: x\r\nX-Long: ",
         (431, "HEADERS_TOO_LARGE", {"limit": 8190})),
    ]
    for head, expected in cases:
        for _ in range(ROUNDS):
            assert envelope(answer_while_sending(server.port, head)) == expected
