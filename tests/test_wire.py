"""The connection under the API, over real HTTP against scripts/server
(app/wire.py, app/gunicorn_worker.py): what a client's next call on the same
kept-alive connection meets after a body the app did not read whole."""
from __future__ import annotations

import itertools
import json

import pytest
import requests

from server_process import running_server

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
