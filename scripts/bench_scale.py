"""scripts/bench scale: what calls cost as history grows. At each size (10^4,
10^6 and, on request, 10^7 messages: ``--sizes 1e4,1e6,1e7``) a copy of a
cached database (scripts/scale_data.py; built once, the build timed) is
served by the real server, and each call is made one at a time from one
client: p50 and p99 per call, then a /metrics scrape, the start-up time, a
backup and a ``reset``, and the database's bytes per message. The verdict
is each call's p50 at the largest size beside the smallest (aim: 1.5x or
less).
"""
from __future__ import annotations

import os
import re
import shutil
import subprocess
import sys
import time
from pathlib import Path

import requests

from botsvc.devkit.servers import suite_server
from botsvc.pagination import ScopedIntCursor
from scripts import scale_data
from scripts.measure import percentile
from scripts.scale_data import MEASURED_BOT, PENDING_BOT, Shape, token

DEFAULT_SIZES = "1e4,1e6"
CACHE = Path(__file__).resolve().parent.parent / ".bench-cache"
NO_LIMITS = dict(BOTSVC_RATE_API_PER_SEC=0, BOTSVC_RATE_SENDS_PER_SEC=0,
                 BOTSVC_RATE_UPLOADS_PER_MIN=0, BOTSVC_RATE_BROADCASTS_PER_MIN=0)
SAMPLES = 200
BUDGET_SECONDS = 20.0   # per call: a call too slow for SAMPLES gets what fits (at least 3)
FORM_TOKEN = re.compile(r'name="csrf_token" value="([^"]+)"')


def sizes_from(text: str | None) -> list[int]:
    return sorted(int(float(s)) for s in (text or DEFAULT_SIZES).split(","))


class Session:
    """One client of one server: a bot's calls, the operator's, the sandbox's."""

    def __init__(self, server):
        self.server, self.http = server, requests.Session()
        self.base = server.base_url

    def timed(self, method: str, path: str, check=None, **kwargs) -> float:
        started = time.perf_counter()
        answer = self.http.request(method, self.base + path, timeout=600, **kwargs)
        elapsed = time.perf_counter() - started
        if answer.status_code != 200:
            raise SystemExit(f"{path}: {answer.status_code} {answer.text[:300]}")
        if check is not None:
            check(answer)
        return elapsed

    def bot(self, bot: int, method: str, params: dict, check=None) -> float:
        return self.timed("POST", f"/v2/{method}", check, json=params,
                          headers={"Authorization": f"Bearer {token(bot)}"})

    def operator(self, method: str, params: dict) -> float:
        return self.timed("POST", f"/manage/v1/{method}", json=params,
                          headers=self.server.admin_headers)

    def sign_in(self) -> None:
        form = self.http.get(f"{self.base}/sandbox/signin", timeout=30)
        answer = self.http.post(f"{self.base}/sandbox/signin", allow_redirects=False, timeout=30,
                                data={"csrf_token": FORM_TOKEN.search(form.text).group(1),
                                      "token": self.server.admin_token})
        assert answer.status_code == 303, answer.text[:300]


ROUND = 10   # calls of one kind on one size before the next size's turn


def measure_alternating(calls_by_size: dict) -> list[float]:
    """Each size's samples of one call, taken in turns of ROUND calls (the
    sizes in order, then in reverse: ABBA), so that load from elsewhere on
    the machine weighs on every size alike. A call too slow for SAMPLES
    stops at BUDGET_SECONDS per size (at least 3 samples)."""
    samples = {size: [] for size in calls_by_size}
    spent = dict.fromkeys(calls_by_size, 0.0)
    order = list(calls_by_size)
    turn = 0
    while any(len(samples[s]) < SAMPLES and (len(samples[s]) < 3 or spent[s] < BUDGET_SECONDS)
              for s in order):
        for size in (order if turn % 2 == 0 else order[::-1]):
            for _ in range(ROUND):
                if len(samples[size]) >= SAMPLES or (len(samples[size]) >= 3
                                                     and spent[size] >= BUDGET_SECONDS):
                    break
                samples[size].append(calls_by_size[size]())
                spent[size] += samples[size][-1]
        turn += 1
    return samples


def calls(session: Session, db_path: str, shape: Shape) -> dict:
    """The measured calls of one size, by label: a function making one call."""
    import sqlite3

    conn = sqlite3.connect(db_path)
    long_chat = conn.execute("SELECT chat_id FROM chats WHERE id = 1").fetchone()[0]
    deep = int(shape.users * 0.9)
    subscriber_cursor = conn.execute(
        "SELECT chat_id FROM chats WHERE bot_id = ? ORDER BY chat_id LIMIT 1 OFFSET ?",
        (MEASURED_BOT, deep)).fetchone()[0]
    broadcast = conn.execute("SELECT broadcast_id FROM broadcasts WHERE bot_id = ?",
                             (MEASURED_BOT,)).fetchone()[0]
    conn.close()
    recipients_cursor = ScopedIntCursor(broadcast).encode(deep)
    edits = iter(range(10 ** 9))
    user, bot = 1, MEASURED_BOT

    def non_empty(answer):
        assert answer.json()["result"], "expected pending updates"

    def empty(answer):
        assert answer.json()["result"] == [], "expected no pending update"

    version = {}

    def state(answer):
        version["v"] = answer.json()["result"]["version"]

    def unchanged(answer):
        assert answer.json()["result"]["changed"] is False, "expected an unchanged chat"

    return {
        "sendMessage": lambda: session.bot(bot, "sendMessage", {
            "chat_id": long_chat, "text": "a new message in a long chat"}),
        "getUpdates, pending updates": lambda: session.bot(
            PENDING_BOT, "getUpdates", {}, non_empty),
        "getUpdates, none pending": lambda: session.bot(bot, "getUpdates", {}, empty),
        "editMessageText, first message": lambda: session.bot(bot, "editMessageText", {
            "chat_id": long_chat, "message_id": 1, "text": f"edited {next(edits)}"}),
        "getSubscribers, page at 90%": lambda: session.bot(bot, "getSubscribers", {
            "cursor": subscriber_cursor}),
        "getBroadcastRecipients, page at 90%": lambda: session.bot(
            bot, "getBroadcastRecipients", {"broadcast_id": broadcast,
                                            "cursor": recipients_cursor}),
        "userGetChat, long chat": lambda: session.operator("userGetChat", {
            "user_id": user, "bot_id": bot}),
        # In this order: the last "changed" answer holds the version "unchanged" sends.
        "sandbox chat state, changed": lambda: session.timed(
            "GET", f"/sandbox/chats/{user}/{bot}/state?since=0.0", state),
        "sandbox chat state, unchanged": lambda: session.timed(
            "GET", f"/sandbox/chats/{user}/{bot}/state?since={version['v']}", unchanged),
        "sandbox chat list page": lambda: session.timed(
            "GET", f"/sandbox/chats?user={user}"),
        "/metrics scrape": lambda: session.timed("GET", "/metrics",
                                                 headers=session.server.admin_headers),
    }


class Size:
    """One size's installation: a copy of its cached database, served."""

    def __init__(self, tmp: Path, messages: int):
        self.messages, self.shape = messages, Shape(messages)
        cached, self.build_seconds = scale_data.cached(CACHE, messages)
        self.data_dir = tmp / f"size-{messages}"
        self.data_dir.mkdir()
        self.db_path = self.data_dir / "botsvc.sqlite3"
        shutil.copyfile(cached, self.db_path)
        scale_data.refresh(str(self.db_path))
        self.database_bytes = os.path.getsize(self.db_path)
        self.server = suite_server(self.data_dir, BOTSVC_TEST_TOOLS=1, **NO_LIMITS)

    def start(self) -> float:
        started = time.perf_counter()
        self.server.start()
        return time.perf_counter() - started

    def backup(self, tmp: Path) -> float:
        backup_dir = tmp / f"backup-{self.messages}"
        started = time.perf_counter()
        subprocess.run([str(Path(sys.executable).parent / "botsvc"), "backup", str(backup_dir)],
                       check=True, capture_output=True,
                       env={**os.environ, "BOTSVC_DATA_DIR": str(self.data_dir)})
        seconds = time.perf_counter() - started
        shutil.rmtree(backup_dir, ignore_errors=True)
        return seconds

    def close(self) -> None:
        self.server.kill()
        shutil.rmtree(self.data_dir, ignore_errors=True)


def run(tmp: Path, sizes_text: str | None = None) -> None:
    sizes = [Size(tmp, messages) for messages in sizes_from(sizes_text)]
    figures = {size.messages: {"calls": {}} for size in sizes}
    try:
        for turn in range(2):   # start-up: each size twice, in turns
            for size in (sizes if turn == 0 else sizes[::-1]):
                size.server.kill()
                figures[size.messages].setdefault("startup", []).append(size.start())
        calls_of = {}
        for size in sizes:
            session = Session(size.server)
            session.sign_in()
            calls_of[size.messages] = calls(session, str(size.db_path), size.shape)
        for label in calls_of[sizes[0].messages]:
            for size in sizes:
                calls_of[size.messages][label]()   # warm-up: its pages come into the cache
            print(f"  measuring {label} ...", flush=True)
            measured = measure_alternating({s.messages: calls_of[s.messages][label]
                                            for s in sizes})
            for messages, samples in measured.items():
                figures[messages]["calls"][label] = samples
        for size in sizes:   # each is measured alone: they write and read the whole database
            figures[size.messages]["backup"] = size.backup(tmp)
            figures[size.messages]["reset"] = Session(size.server).operator("reset", {})
    finally:
        for size in sizes:
            size.close()
    for size in sizes:
        report_size(size, figures[size.messages])
    smallest, largest = sizes[0].messages, sizes[-1].messages
    print(f"scale: p50 at {largest:.0e} messages beside {smallest:.0e} (aim: 1.5x or less)")
    for label, samples in figures[largest]["calls"].items():
        small = percentile(figures[smallest]["calls"][label], 0.5)
        large = percentile(samples, 0.5)
        verdict = "ok" if large <= 1.5 * small else "OVER"
        print(f"  {label:<38} {large * 1000:9.2f} ms beside {small * 1000:8.2f} ms = "
              f"{large / small:6.2f}x  {verdict}")
    for key, label in (("startup", "start-up (median of 2)"), ("backup", "backup"),
                       ("reset", "reset")):
        print(f"  {label:<38} {_seconds(figures[largest][key]):9.2f} s  beside "
              f"{_seconds(figures[smallest][key]):8.2f} s")


def _seconds(value) -> float:
    return sorted(value)[len(value) // 2] if isinstance(value, list) else value


def report_size(size: Size, figures: dict) -> None:
    shape = size.shape
    print(f"  {size.messages:.0e} messages, {shape.users} users, {scale_data.BOTS} bots: "
          f"database {size.database_bytes / 1e6:.1f} MB = "
          f"{size.database_bytes / size.messages:.0f} bytes a message; built in "
          f"{size.build_seconds:.1f} s (once, then cached)")
    for label, samples in figures["calls"].items():
        print(f"    {label:<38} p50 {percentile(samples, 0.5) * 1000:9.2f} ms   "
              f"p99 {percentile(samples, 0.99) * 1000:9.2f} ms   ({len(samples)} calls)")
    print(f"    start-up {_seconds(figures['startup']):.2f} s, backup {figures['backup']:.2f} s,"
          f" reset {figures['reset']:.2f} s", flush=True)
