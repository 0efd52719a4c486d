"""The real service (scripts/server: gunicorn, 2 workers, each with its own
scheduler) delivering to a local HTTPS receiver: every update exactly once,
per bot in update_id order. The receiver's certificate is for the IP literal
127.0.0.1 (the only way to name loopback that setWebhook accepts in private
mode), issued by the test CA passed in BOTSVC_WEBHOOK_CA_BUNDLE."""
from __future__ import annotations

import json
import threading
import time
from concurrent.futures import ThreadPoolExecutor

import pytest
import requests

from tests.support.servers import running_server
from tests.webhooks.support import SECRET, statuses

pytestmark = pytest.mark.server

BOTS = 3
MESSAGES_PER_BOT = 40


def test_each_update_is_delivered_exactly_once_in_order_by_two_workers(
        tmp_path, make_receiver, ca_file):
    lock = threading.Lock()
    in_flight = {}
    overlaps = []

    def record(handler):
        with lock:
            in_flight[handler.path] = in_flight.get(handler.path, 0) + 1
            if in_flight[handler.path] > 1:
                overlaps.append(handler.path)
        time.sleep(0.002)   # widen the window in which a duplicate would overlap
        with lock:
            in_flight[handler.path] -= 1
        statuses(200)(handler)

    receiver = make_receiver(record, cert_for="127.0.0.1")
    with running_server(tmp_path, BOTSVC_WEBHOOK_ALLOW_PRIVATE=1,
                        BOTSVC_WEBHOOK_CA_BUNDLE=ca_file, BOTSVC_RATE_API_PER_SEC=0,
                        BOTSVC_RATE_SENDS_PER_SEC=0) as server:
        bots = []
        for n in range(BOTS):
            created = server.operator("createBot", username=f"hook{n}_bot")
            user = server.operator("createUser")["user_id"]
            first = server.operator("userStart", user_id=user, bot_id=created["bot"]["id"])
            response = requests.post(
                f"{server.base_url}/v2/setWebhook",
                json={"url": f"https://127.0.0.1:{receiver.port}/bot{created['bot']['id']}",
                      "secret_token": SECRET},
                headers={"Authorization": f"Bearer {created['token']}"}, timeout=30)
            assert response.json() == {"ok": True, "result": True}
            bots.append((created, user, first["update_id"]))

        def talk(bot):
            created, user, _ = bot
            for i in range(MESSAGES_PER_BOT):
                server.operator("userSendMessage", user_id=user, bot_id=created["bot"]["id"],
                                text=f"message {i}")

        with ThreadPoolExecutor(BOTS) as pool:   # requests spread over both workers
            list(pool.map(talk, bots))

        expected = BOTS * (MESSAGES_PER_BOT + 1)
        deadline = time.monotonic() + 60
        while len(receiver.requests) < expected and time.monotonic() < deadline:
            time.sleep(0.05)
        time.sleep(1.5)   # a duplicate would have time to arrive
        infos = [requests.post(f"{server.base_url}/v2/getWebhookInfo", json={},
                               headers={"Authorization": f"Bearer {created['token']}"},
                               timeout=30).json()["result"] for created, _, _ in bots]

    by_path: dict[str, list[int]] = {}
    for request in receiver.requests:
        assert request["headers"]["x-platform-bot-secret-token"] == SECRET
        by_path.setdefault(request["path"], []).append(json.loads(request["body"])["update_id"])
    for created, _, first_update in bots:
        ids = by_path[f"/bot{created['bot']['id']}"]
        assert len(ids) == MESSAGES_PER_BOT + 1, ids
        assert ids == sorted(set(ids)) and ids[0] == first_update
    assert len(receiver.requests) == expected
    assert overlaps == []
    for info in infos:
        assert info["pending_update_count"] == 0 and "last_error" not in info
        assert isinstance(info["last_success_at"], int)
