"""scripts/bench tools: the testing tools' costs beside baselines of the same run.

- reset of a small installation (10 bots, 100 users, 1,000 messages) beside
  an operator call that does nothing (listBots of an empty installation);
- a webhook retry brought forward by advanceClock (from the request to the
  receiver) beside a new update's delivery (userSendMessage to arrival);
- getMe of a bot with a fault waiting on another method (the flag makes the
  pipeline look, and find nothing) beside getMe of a bot without faults.
"""
from __future__ import annotations

import threading
import time
from pathlib import Path

import requests

from botsvc.devkit.receivers import Receiver
from botsvc.devkit.servers import running_server
from botsvc.testkit.client import BotApi, OperatorClient
from scripts.measure import median


def timed(fn) -> float:
    started = time.perf_counter()
    fn()
    return time.perf_counter() - started


def fill(operator: OperatorClient, bots: int = 10, users: int = 100, messages: int = 1000):
    made = [operator.create_bot(f"fill{n}_bot") for n in range(bots)]
    pairs = []
    for n in range(users):
        user, bot = operator.create_user(), made[n % bots]
        operator.user_start(user, bot.id)
        pairs.append((user, bot.id))
    for n in range(messages - users):   # each Start was a message already
        user, bot_id = pairs[n % users]
        operator.user_send_message(user, bot_id, f"message {n}")


def bench_reset(operator: OperatorClient, rounds: int) -> tuple[list, list]:
    resets, baselines = [], []
    for _ in range(rounds):
        operator.reset()
        baselines.append(median_of(lambda: operator.list_bots(), 20))
        fill(operator)
        resets.append(timed(operator.reset))
    return baselines, resets


def bench_retry(operator: OperatorClient, rounds: int) -> tuple[list, list]:
    answers = {"status": 200}
    arrived = threading.Condition()

    def respond(handler):
        handler.send_response(answers["status"])
        handler.send_header("Content-Length", "0")
        handler.end_headers()
        with arrived:
            arrived.notify_all()

    receiver = Receiver(None, respond)

    def wait_for(count: int) -> float:
        with arrived:
            assert arrived.wait_for(lambda: len(receiver.requests) >= count, 30)
        return receiver.requests[count - 1]["at"]

    try:
        operator.reset()
        created = operator.create_bot("hooked_bot")
        user = operator.create_user()
        BotApi(operator.base_url, created.token).set_webhook(
            f"http://127.0.0.1:{receiver.port}/hook", "bench_secret_token_0123456789")
        operator.user_start(user, created.id)
        wait_for(1)
        fresh, retried = [], []
        for _ in range(rounds):
            expected = len(receiver.requests) + 1
            started = time.perf_counter()
            operator.user_send_message(user, created.id, "fresh")
            fresh.append(wait_for(expected) - started)
            answers["status"] = 500
            operator.user_send_message(user, created.id, "retried")
            wait_for(expected + 1)           # failed: the retry is 0.8 to 1 s away
            answers["status"] = 200
            started = time.perf_counter()
            operator.advance_clock(600)
            retried.append(wait_for(expected + 2) - started)
        return fresh, retried
    finally:
        receiver.close()


def bench_flag(operator: OperatorClient, base_url: str, calls: int) -> tuple[list, list]:
    operator.reset()
    plain, flagged = operator.create_bot("plain_bot"), operator.create_bot("flagged_bot")
    operator.inject_fault(flagged.id, "sendMessage", error_code="INTERNAL_ERROR", count=1000)
    session = requests.Session()

    def get_me(token: str) -> None:
        response = session.post(f"{base_url}/v2/getMe", json={}, timeout=30,
                                headers={"Authorization": f"Bearer {token}"})
        assert response.status_code == 200

    for _ in range(200):   # warm-up
        get_me(plain.token), get_me(flagged.token)
    plains, flaggeds = [], []
    for _ in range(calls):
        plains.append(timed(lambda: get_me(plain.token)))
        flaggeds.append(timed(lambda: get_me(flagged.token)))
    return plains, flaggeds


def median_of(fn, times: int) -> float:
    return median([timed(fn) for _ in range(times)])


def run(tmp: Path, rounds: int = 5, calls: int = 2000) -> None:
    # running_server turns the rate limits off: this measures the tools.
    with running_server(tmp, BOTSVC_TEST_TOOLS=1, BOTSVC_WEBHOOK_ALLOW_PRIVATE=1) as server:
        operator = OperatorClient(server.base_url, server.admin_token)
        baselines, resets = bench_reset(operator, rounds)
        fresh, retried = bench_retry(operator, rounds)
        plains, flaggeds = bench_flag(operator, server.base_url, calls)
    ms = 1000
    print(f"tools: 2 gunicorn workers x 4 threads; one client; {rounds} rounds")
    print(f"  reset (10 bots, 100 users, 1,000 messages)   median {median(resets) * ms:7.2f} ms"
          f"   vs listBots of nothing {median(baselines) * ms:6.2f} ms"
          f"   = {median(resets) / median(baselines):5.1f}x")
    print(f"  retry after advanceClock -> receiver          median {median(retried) * ms:7.2f} ms"
          f"   vs a new update -> receiver {median(fresh) * ms:6.2f} ms"
          f"   = {median(retried) / median(fresh):5.2f}x")
    print(f"  getMe, a fault waiting on another method      median {median(flaggeds) * ms:7.3f} ms"
          f"   vs no fault {median(plains) * ms:6.3f} ms"
          f"   = {median(flaggeds) / median(plains):5.2f}x ({calls} calls each, alternating)")
