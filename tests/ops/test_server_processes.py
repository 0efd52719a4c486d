"""The real scripts/server (gunicorn, 2 workers): rate limits and idempotency
hold across processes, tokens stay out of the logs, the clean-up job runs."""
from __future__ import annotations

import json
import sqlite3
import threading
import time

import pytest
import requests

from botsvc.devkit.servers import running_server

pytestmark = pytest.mark.server


def _bot_with_chat(server, username):
    created = server.operator("createBot", username=username)
    user = server.operator("createUser")["user_id"]
    started = server.operator("userStart", user_id=user, bot_id=created["bot"]["id"])
    return created, user, started["chat_id"]


def _fire(count, request):
    """Run ``request(i)`` from ``count`` threads released together, each on its
    own connection; returns (results in order, seconds from release to last answer)."""
    results = [None] * count
    barrier = threading.Barrier(count + 1)

    def run(i):
        barrier.wait()
        results[i] = request(i)

    threads = [threading.Thread(target=run, args=(i,)) for i in range(count)]
    for thread in threads:
        thread.start()
    barrier.wait()
    started = time.monotonic()
    for thread in threads:
        thread.join(60)
    return results, time.monotonic() - started


@pytest.mark.alone
def test_rate_limit_holds_across_worker_processes(tmp_path):
    rate = 20
    with running_server(tmp_path, BOTSVC_RATE_API_PER_SEC=rate,
                        BOTSVC_RATE_SENDS_PER_SEC=0) as server:
        created, _, _ = _bot_with_chat(server, "busy_bot")
        headers = {"Authorization": f"Bearer {created['token']}", "Connection": "close"}

        def call(_):
            response = requests.post(f"{server.base_url}/v2/getMe", json={}, headers=headers,
                                     timeout=30)
            return response.status_code, response.json(), response.headers.get("Retry-After")

        results, elapsed = _fire(60, call)
    assert elapsed < 5, elapsed
    statuses = [status for status, _, _ in results]
    assert set(statuses) <= {200, 429}, results
    allowed = statuses.count(200)
    # the whole burst, and never more than the rate allows over the elapsed time
    assert rate <= allowed <= rate + elapsed * rate + 1, (allowed, elapsed)
    for status, body, retry_after in results:
        if status == 429:
            assert body["error_code"] == "RATE_LIMITED" and set(body) == {
                "ok", "error_code", "description", "parameters"}
            assert type(body["parameters"]["retry_after"]) is int
            assert body["parameters"]["retry_after"] >= 1
            assert retry_after == str(body["parameters"]["retry_after"])


def test_idempotency_holds_across_worker_processes(tmp_path):
    with running_server(tmp_path) as server:
        created, user, chat_id = _bot_with_chat(server, "careful_bot")
        headers = {"Authorization": f"Bearer {created['token']}", "Connection": "close",
                   "Idempotency-Key": "pay-order-1"}

        def send(_):
            response = requests.post(f"{server.base_url}/v2/sendMessage",
                                     json={"chat_id": chat_id, "text": "exactly once"},
                                     headers=headers, timeout=30)
            return (response.status_code, response.json(),
                    response.headers.get("Idempotent-Replayed"))

        results, _ = _fire(20, send)
        view = server.operator("userGetChat", user_id=user, bot_id=created["bot"]["id"])
    assert [status for status, _, _ in results] == [200] * 20, results
    assert len({json.dumps(body, sort_keys=True) for _, body, _ in results}) == 1
    assert [replayed for _, _, replayed in results].count(None) == 1
    assert sorted(r for _, _, r in results if r) == ["true"] * 19
    assert [m["text"] for m in view["messages"] if m["from_bot"]] == ["exactly once"]


def test_tokens_and_query_strings_stay_out_of_the_server_log(tmp_path):
    with running_server(tmp_path, BOTSVC_ACCESS_LOG=1) as server:
        created, _, chat_id = _bot_with_chat(server, "quiet_bot")
        token = created["token"]
        base = server.base_url
        requests.post(f"{base}/v2/getMe", json={}, headers={"Authorization": f"Bearer {token}"})
        requests.post(f"{base}/v2/sendMessage", json={"chat_id": chat_id, "text": "hi"},
                      headers={"Authorization": f"Bearer {token}"})
        requests.post(f"{base}/v2/getMe?token={token}&sig=QUERYSECRET42", json={})
        requests.post(f"{base}/v2/getMe", json={},
                      headers={"Authorization": f"Bearer {token[:-1]}x"})
        rotated = server.operator("rotateToken", bot_id=created["bot"]["id"])["token"]
        requests.post(f"{base}/v2/getMe", json={}, headers={"Authorization": f"Bearer {rotated}"})
        requests.post(f"{base}/v2/getMe", data=b"{broken",
                      headers={"Authorization": f"Bearer {rotated}"})
        time.sleep(0.3)
    log = open(server.log_path, encoding="utf-8", errors="replace").read()
    assert "/v2/getMe" in log  # the access log is on and was written
    for secret in (token.split(":")[1], rotated.split(":")[1], server.admin_token,
                   "QUERYSECRET42"):
        assert secret not in log


def test_json_body_limit_over_http(tmp_path):
    with running_server(tmp_path) as server:
        created, _, _ = _bot_with_chat(server, "chunky_bot")
        url = f"{server.base_url}/v2/getMe"
        headers = {"Authorization": f"Bearer {created['token']}",
                   "Content-Type": "application/json"}

        def chunked(size):  # a generator body is sent without Content-Length
            yield b"{"
            for _ in range(size // 65536):
                yield b" " * 65536
            yield b" " * (size % 65536) + b"}"

        for size, status in (((1 << 20) - 2, 200), (1 << 20, 413)):
            response = requests.post(url, data=chunked(size), headers=headers, timeout=30)
            assert response.status_code == status, response.text
        for size, status in ((1 << 20, 200), ((1 << 20) + 1, 413), (8 << 20, 413)):
            body = b"{" + b" " * (size - 2) + b"}"
            response = requests.post(url, data=body, headers=headers, timeout=30)
            assert response.status_code == status, response.text
            if status == 413:
                assert response.json()["error_code"] == "REQUEST_TOO_LARGE"


def test_scheduled_cleanup_runs_in_the_server(tmp_path):
    with running_server(tmp_path) as server:
        created, user, _ = _bot_with_chat(server, "tidy_bot")
        auth = {"Authorization": f"Bearer {created['token']}"}
        server.operator("userSendMessage", user_id=user, bot_id=created["bot"]["id"],
                        text="fresh")
        data_dir = server.data_dir
    conn = sqlite3.connect(f"{data_dir}/botsvc.sqlite3")
    with conn:
        oldest = conn.execute("SELECT MIN(update_id) FROM updates").fetchone()[0]
        conn.execute("UPDATE updates SET created_at = created_at - 90000 WHERE update_id = ?",
                     (oldest,))
        conn.execute("UPDATE periodic_jobs SET next_run_at = 0")  # due at the next start
    conn.close()
    with running_server(tmp_path) as server:
        deadline = time.monotonic() + 15
        while time.monotonic() < deadline:
            updates = requests.post(f"{server.base_url}/v2/getUpdates", json={},
                                    headers=auth, timeout=10).json()["result"]
            if len(updates) == 1:
                break
            time.sleep(0.2)
    assert [u["message"]["text"] for u in updates] == ["fresh"]

