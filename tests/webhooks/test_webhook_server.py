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

from botsvc.devkit.receivers import statuses
from botsvc.devkit.servers import running_server
from tests.webhooks.support import SECRET

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
    # Each worker keeps at most one connection per bot (a bot's queue may be
    # drained by either worker); a new connection per delivery would be 123.
    assert receiver.connections <= 2 * BOTS
    for info in infos:
        assert info["pending_update_count"] == 0 and "last_error" not in info
        assert isinstance(info["last_success_at"], int)


@pytest.mark.alone
def test_a_receiver_that_takes_five_seconds_does_not_delay_other_bots(
        tmp_path, make_receiver, ca_file):
    slow_answers = []

    def slow(handler):
        time.sleep(5)
        statuses(200)(handler)
        slow_answers.append(time.monotonic())

    slow_receiver = make_receiver(slow, cert_for="127.0.0.1")
    quick_receiver = make_receiver(statuses(200), cert_for="127.0.0.1")
    with running_server(tmp_path, BOTSVC_WEBHOOK_ALLOW_PRIVATE=1,
                        BOTSVC_WEBHOOK_CA_BUNDLE=ca_file) as server:
        def new_hooked_bot(name: str, receiver) -> tuple[dict, int]:
            created = server.operator("createBot", username=name)
            user = server.operator("createUser")["user_id"]
            server.operator("userStart", user_id=user, bot_id=created["bot"]["id"])
            response = requests.post(
                f"{server.base_url}/v2/setWebhook",
                json={"url": f"https://127.0.0.1:{receiver.port}/bot{created['bot']['id']}",
                      "secret_token": SECRET},
                headers={"Authorization": f"Bearer {created['token']}"}, timeout=30)
            assert response.json() == {"ok": True, "result": True}
            return created, user

        slow_bot, slow_user = new_hooked_bot("slow_bot", slow_receiver)
        for i in range(3):   # 20 s of answers queued behind the /start
            server.operator("userSendMessage", user_id=slow_user,
                            bot_id=slow_bot["bot"]["id"], text=f"slow {i}")
        quick = [new_hooked_bot(f"quick{n}_bot", quick_receiver) for n in range(2)]
        for i in range(MESSAGES_PER_BOT):
            for created, user in quick:
                server.operator("userSendMessage", user_id=user, bot_id=created["bot"]["id"],
                                text=f"quick {i}")
        expected = 2 * (MESSAGES_PER_BOT + 1)
        deadline = time.monotonic() + 60
        while len(quick_receiver.requests) < expected and time.monotonic() < deadline:
            time.sleep(0.02)
        answered_meanwhile = len(slow_answers)
        slow_requests_meanwhile = len(slow_receiver.requests)

    assert len(quick_receiver.requests) == expected
    # Generous: the quick bots' 82 deliveries finished before the slow
    # receiver could give its second answer (10 s in).
    assert answered_meanwhile <= 1
    by_path: dict[str, list[int]] = {}
    for request in quick_receiver.requests:
        by_path.setdefault(request["path"], []).append(json.loads(request["body"])["update_id"])
    for ids in by_path.values():
        assert len(ids) == MESSAGES_PER_BOT + 1 and ids == sorted(ids)
    assert 1 <= slow_requests_meanwhile <= 2   # its updates go one at a time, each 5 s
