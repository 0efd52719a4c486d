#!/usr/bin/env python3
"""Broadcast benchmark (a part of scripts/bench, not a test).

Starts the real server (scripts/server: gunicorn, 2 workers, rate limits off)
on a temporary data dir, gives one bot N members, then in the same run:

  1. N sendMessage calls made by an HTTP client (requests.Session per thread,
     a few threads), one per member, timed from first request to last answer;
  2. one createBroadcast to all N members, timed from the request to the
     moment getBroadcast reports it completed;

and prints both times and their ratio (the aim: the broadcast at least 10
times faster). Usage: .venv/bin/python scripts/bench_broadcast.py [--members N]
"""
from __future__ import annotations

import argparse
import tempfile
import threading
import time
from pathlib import Path

import requests

from tests.support.members import add_members
from tests.support.servers import suite_server


def send_messages(base_url: str, token: str, chat_ids: list[str], threads: int) -> float:
    """Every chat gets one sendMessage; returns the wall time in seconds."""
    failures: list[str] = []
    shares = [chat_ids[i::threads] for i in range(threads)]

    def client(share: list[str]) -> None:
        session = requests.Session()
        session.headers["Authorization"] = f"Bearer {token}"
        for chat_id in share:
            answer = session.post(f"{base_url}/v2/sendMessage",
                                  json={"chat_id": chat_id, "text": "one by one"}, timeout=30)
            if answer.status_code != 200:
                failures.append(answer.text)

    workers = [threading.Thread(target=client, args=(share,)) for share in shares]
    started = time.perf_counter()
    for worker in workers:
        worker.start()
    for worker in workers:
        worker.join()
    elapsed = time.perf_counter() - started
    if failures:
        raise SystemExit(f"{len(failures)} sendMessage calls failed, e.g. {failures[0]}")
    return elapsed


def interactive_latencies(base_url: str, token: str, chat_id: str,
                          stop: threading.Event, latencies: list[float]) -> None:
    """The bot's own replies while the broadcast runs: one sendMessage every
    20 ms, each answer's latency recorded (they must not starve)."""
    session = requests.Session()
    session.headers["Authorization"] = f"Bearer {token}"
    while not stop.is_set():
        started = time.perf_counter()
        answer = session.post(f"{base_url}/v2/sendMessage", timeout=30,
                              json={"chat_id": chat_id, "text": "a reply"})
        latencies.append(time.perf_counter() - started)
        if answer.status_code != 200:
            raise SystemExit(f"a reply during the broadcast failed: {answer.text}")
        time.sleep(0.02)


def broadcast(base_url: str, token: str, expected: int) -> float:
    """One broadcast to every member; returns the seconds until completed."""
    session = requests.Session()
    session.headers["Authorization"] = f"Bearer {token}"
    started = time.perf_counter()
    created = session.post(f"{base_url}/v2/createBroadcast", timeout=30, json={
        "method": "sendMessage", "payload": {"text": "all at once"}}).json()
    broadcast_id = created["result"]["broadcast_id"]
    while True:
        result = session.post(f"{base_url}/v2/getBroadcast", timeout=30,
                              json={"broadcast_id": broadcast_id}).json()["result"]
        if result["status"] == "completed":
            elapsed = time.perf_counter() - started
            break
        time.sleep(0.01)
    if result["counts"]["sent"] != expected:
        raise SystemExit(f"broadcast sent {result['counts']} instead of {expected}")
    return elapsed


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--members", type=int, default=10000)
    parser.add_argument("--threads", type=int, default=4, help="sendMessage client threads")
    args = parser.parse_args()
    with tempfile.TemporaryDirectory(prefix="botsvc-bench-") as tmp:
        run(Path(tmp), args.members, args.threads)


def run(tmp: Path, members: int = 10000, threads: int = 4) -> None:
    """The broadcast part of scripts/bench."""
    server = suite_server(Path(tmp) / "data").start()
    try:
        created = requests.post(f"{server.base_url}/manage/v1/createBot",
                                json={"username": "benchbroadcastbot"},
                                headers=server.admin_headers, timeout=10).json()["result"]
        token = created["token"]
        chat_ids = add_members(server.db_path, created["bot"]["id"], members)
        print(f"members: {len(chat_ids)}; server: 2 workers, rate limits off")

        one_by_one = send_messages(server.base_url, token, chat_ids, threads)
        print(f"sendMessage x {members} ({threads} client threads): "
              f"{one_by_one:.2f} s ({members / one_by_one:.0f} messages/s)")

        stop, latencies = threading.Event(), []
        replies = threading.Thread(target=interactive_latencies, args=(
            server.base_url, token, chat_ids[0], stop, latencies))
        replies.start()
        try:
            bulk = broadcast(server.base_url, token, len(chat_ids))
        finally:
            stop.set()
            replies.join()
        print(f"createBroadcast to {members} members, until completed: "
              f"{bulk:.2f} s ({members / bulk:.0f} messages/s)")
        latencies.sort()
        print(f"  the bot's own sendMessage meanwhile: {len(latencies)} calls, "
              f"median {latencies[len(latencies) // 2] * 1000:.0f} ms, "
              f"max {latencies[-1] * 1000:.0f} ms")
        ratio = one_by_one / bulk
        print(f"ratio: the broadcast is {ratio:.1f} times faster (aim: at least 10)")
    finally:
        server.kill()


if __name__ == "__main__":
    main()
