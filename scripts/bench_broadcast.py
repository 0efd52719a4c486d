#!/usr/bin/env python3
"""scripts/bench broadcast: a broadcast beside a client's loop of sendMessage,
this tree beside a baseline tree (``bench_baseline``), in the same sitting.

Both servers run at once (scripts/server's gunicorn: 2 workers, rate limits
off). Each side's bot gets ``members`` members, then in ABBA rounds (the side
measured first changes every round):

  1. one sendMessage per member made by an HTTP client (``threads`` threads,
     a requests.Session each), timed from first request to last answer;
  2. one createBroadcast to all of them, timed from the request to the moment
     getBroadcast reports it completed, while the bot itself sends a
     sendMessage every 20 ms (their latencies are recorded);

and the ratio of the two times per round. Then each side broadcasts to
``large`` members of another bot, with the bot's own sendMessage calls
meanwhile, whose p99 is the figure for "a broadcast does not starve the bot"
(beside the same calls for 8 s with no broadcast, which show what the machine
gives at the moment).
Usage: .venv/bin/python -m scripts.bench_broadcast [--members N] [--large N]
"""
from __future__ import annotations

import argparse
import tempfile
import threading
import time
from dataclasses import dataclass, field
from pathlib import Path

import requests

from botsvc.devkit.members import add_members
from botsvc.devkit.servers import running_server
from botsvc.testkit.server import LocalServer
from scripts.bench_baseline import baseline_argv, baseline_tree, describe
from scripts.measure import median, percentile


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


def broadcast(base_url: str, token: str, expected: int, reply_chat: str,
              latencies: list[float]) -> float:
    """One broadcast to every member, with the bot's own sends meanwhile
    (their latencies go to ``latencies``); returns the seconds until completed."""
    session = requests.Session()
    session.headers["Authorization"] = f"Bearer {token}"
    stop = threading.Event()
    replies = threading.Thread(target=interactive_latencies,
                               args=(base_url, token, reply_chat, stop, latencies))
    replies.start()
    try:
        started = time.perf_counter()
        created = session.post(f"{base_url}/v2/createBroadcast", timeout=60, json={
            "method": "sendMessage", "payload": {"text": "all at once"}}).json()
        broadcast_id = created["result"]["broadcast_id"]
        while True:
            result = session.post(f"{base_url}/v2/getBroadcast", timeout=30,
                                  json={"broadcast_id": broadcast_id}).json()["result"]
            if result["status"] == "completed":
                elapsed = time.perf_counter() - started
                break
            time.sleep(0.01)
    finally:
        stop.set()
        replies.join()
    if result["counts"]["sent"] != expected:
        raise SystemExit(f"broadcast sent {result['counts']} instead of {expected}")
    return elapsed


@dataclass
class Side:
    name: str
    server: LocalServer
    token: str = ""
    chat_ids: list[str] = field(default_factory=list)
    loops: list[float] = field(default_factory=list)
    bulks: list[float] = field(default_factory=list)
    replies: list[float] = field(default_factory=list)
    large_seconds: float = 0.0
    large_replies: list[float] = field(default_factory=list)
    idle_replies: list[float] = field(default_factory=list)

    def new_bot(self, username: str, members: int) -> tuple[str, list[str]]:
        created = requests.post(f"{self.server.base_url}/manage/v1/createBot",
                                json={"username": username}, headers=self.server.admin_headers,
                                timeout=10).json()["result"]
        return created["token"], add_members(self.server.db_path, created["bot"]["id"], members)

    def round(self, threads: int) -> None:
        self.loops.append(send_messages(self.server.base_url, self.token, self.chat_ids,
                                        threads))
        self.bulks.append(broadcast(self.server.base_url, self.token, len(self.chat_ids),
                                    self.chat_ids[0], self.replies))

    def large(self, members: int) -> None:
        token, chat_ids = self.new_bot(f"large{self.name}bot", members)
        stop = threading.Event()   # the same replies with no broadcast, for comparison
        threading.Timer(8.0, stop.set).start()
        interactive_latencies(self.server.base_url, token, chat_ids[0], stop, self.idle_replies)
        self.large_seconds = broadcast(self.server.base_url, token, members, chat_ids[0],
                                       self.large_replies)


def run(tmp: Path, members: int = 10000, large: int = 100000, rounds: int = 3,
        threads: int = 4) -> None:
    """The broadcast part of scripts/bench."""
    with baseline_tree(tmp) as tree, \
            running_server(tmp / "baseline", argv=baseline_argv(tree)) as base, \
            running_server(tmp / "target") as target:
        sides = [Side("base", base), Side("this", target)]
        for side in sides:
            side.token, side.chat_ids = side.new_bot(f"bench{side.name}bot", members)
        for turn in range(rounds):
            for side in (sides if turn % 2 == 0 else sides[::-1]):
                side.round(threads)
        if large:
            for side in sides[::-1] if rounds % 2 else sides:
                side.large(large)
    report(sides, members, large, rounds, threads)


def report(sides: list[Side], members: int, large: int, rounds: int, threads: int) -> None:
    base, this = sides
    print(f"broadcast: baseline = {describe()}; this tree beside it, in {rounds} ABBA rounds")
    print(f"  each: 2 gunicorn workers, rate limits off; {members} members; the client loop "
          f"uses {threads} threads")
    for turn in range(rounds):
        print(f"  round {turn + 1}: baseline loop {base.loops[turn]:6.2f} s, broadcast "
              f"{base.bulks[turn]:5.2f} s = {base.loops[turn] / base.bulks[turn]:5.1f}x   "
              f"this tree loop {this.loops[turn]:6.2f} s, broadcast {this.bulks[turn]:5.2f} s"
              f" = {this.loops[turn] / this.bulks[turn]:5.1f}x")
    ratio = median([loop / bulk for loop, bulk in zip(this.loops, this.bulks, strict=True)])
    base_ratio = median([loop / bulk for loop, bulk in zip(base.loops, base.bulks, strict=True)])
    print(f"  the broadcast is {ratio:.1f}x faster than the client loop beside the "
          f"baseline's {base_ratio:.1f}x (median of rounds; aim: 25x or more)")
    print(f"  broadcast alone: {members / median(this.bulks):.0f} messages/s beside the "
          f"baseline's {members / median(base.bulks):.0f}")
    for side, label in ((base, "baseline"), (this, "this tree")):
        print(f"  the bot's own sendMessage during the {members}-member broadcasts, {label:<9}"
              f" {len(side.replies)} calls: p50 {median(side.replies) * 1000:5.1f} ms, "
              f"p99 {percentile(side.replies, 0.99) * 1000:5.1f} ms")
    if large:
        for side, label in ((base, "baseline"), (this, "this tree")):
            print(f"  {large} members, {label:<9}: {side.large_seconds:6.1f} s "
                  f"({large / side.large_seconds:.0f} messages/s); the bot's own sendMessage "
                  f"meanwhile, {len(side.large_replies)} calls: p50 "
                  f"{median(side.large_replies) * 1000:5.1f} ms, p99 "
                  f"{percentile(side.large_replies, 0.99) * 1000:5.1f} ms (aim: under 50 ms), "
                  f"max {max(side.large_replies) * 1000:5.0f} ms; with no broadcast "
                  f"({len(side.idle_replies)} calls): p50 {median(side.idle_replies) * 1000:5.1f}"
                  f" ms, p99 {percentile(side.idle_replies, 0.99) * 1000:5.1f} ms")


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--members", type=int, default=10000)
    parser.add_argument("--large", type=int, default=100000,
                        help="members of the large broadcast (0: skip it)")
    parser.add_argument("--rounds", type=int, default=3)
    parser.add_argument("--threads", type=int, default=4, help="sendMessage client threads")
    args = parser.parse_args()
    with tempfile.TemporaryDirectory(prefix="botsvc-bench-") as tmp:
        run(Path(tmp), args.members, args.large, args.rounds, args.threads)


if __name__ == "__main__":
    main()
