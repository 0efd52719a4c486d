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

from app.pagination import ScopedIntCursor
from scripts import scale_data
from scripts.scale_data import MEASURED_BOT, PENDING_BOT, Shape, token
from tests.support.server_process import ServerProcess

DEFAULT_SIZES = "1e4,1e6"
CACHE = Path(__file__).resolve().parent.parent / ".bench-cache"
NO_LIMITS = dict(BOTSVC_RATE_API_PER_SEC=0, BOTSVC_RATE_SENDS_PER_SEC=0,
                 BOTSVC_RATE_UPLOADS_PER_MIN=0, BOTSVC_RATE_BROADCASTS_PER_MIN=0)
SAMPLES = 200
BUDGET_SECONDS = 20.0   # per call: a call too slow for SAMPLES gets what fits (at least 3)
FORM_TOKEN = re.compile(r'name="csrf_token" value="([^"]+)"')


def percentile(values: list[float], fraction: float) -> float:
    ordered = sorted(values)
    return ordered[min(len(ordered) - 1, int(fraction * len(ordered)))]


def sizes_from(text: str | None) -> list[int]:
    return sorted(int(float(s)) for s in (text or DEFAULT_SIZES).split(","))


class Session:
    """One client of one server: a bot's calls, the operator's, the sandbox's."""

    def __init__(self, server: ServerProcess):
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


def measure(call) -> list[float]:
    samples, spent = [], 0.0
    while len(samples) < SAMPLES and (len(samples) < 3 or spent < BUDGET_SECONDS):
        samples.append(call())
        spent += samples[-1]
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


def one_size(tmp: Path, messages: int) -> dict:
    shape = Shape(messages)
    cached, build_seconds = scale_data.cached(CACHE, messages)
    data_dir = tmp / f"size-{messages}"
    data_dir.mkdir()
    db_path = data_dir / "botsvc.sqlite3"
    shutil.copyfile(cached, db_path)
    scale_data.refresh(str(db_path))
    size = os.path.getsize(db_path)
    server = ServerProcess(data_dir, BOTSVC_TEST_TOOLS=1, **NO_LIMITS)
    started = time.perf_counter()
    server.start()
    figures: dict = {"build_seconds": build_seconds, "bytes_per_message": size / messages,
                     "database_bytes": size, "startup_seconds": time.perf_counter() - started,
                     "calls": {}}
    try:
        session = Session(server)
        session.sign_in()
        for label, call in calls(session, str(db_path), shape).items():
            call()   # warm-up: the pages this call reads come into the cache
            figures["calls"][label] = measure(call)
        backup_dir = tmp / f"backup-{messages}"
        started = time.perf_counter()
        subprocess.run([str(Path(sys.executable).parent / "botsvc"), "backup", str(backup_dir)],
                       check=True, capture_output=True,
                       env={**os.environ, "BOTSVC_DATA_DIR": str(data_dir)})
        figures["backup_seconds"] = time.perf_counter() - started
        shutil.rmtree(backup_dir, ignore_errors=True)
        figures["reset_seconds"] = session.operator("reset", {})
    finally:
        server.kill()
    shutil.rmtree(data_dir, ignore_errors=True)
    return figures


def run(tmp: Path, sizes_text: str | None = None) -> None:
    sizes = sizes_from(sizes_text)
    results = {}
    for messages in sizes:
        print(f"scale: {messages:.0e} messages ...", flush=True)
        results[messages] = one_size(tmp, messages)
        report_size(messages, results[messages])
    smallest, largest = sizes[0], sizes[-1]
    print(f"scale: p50 at {largest:.0e} messages beside {smallest:.0e} (aim: 1.5x or less)")
    for label, samples in results[largest]["calls"].items():
        small = percentile(results[smallest]["calls"][label], 0.5)
        large = percentile(samples, 0.5)
        verdict = "ok" if large <= 1.5 * small else "OVER"
        print(f"  {label:<38} {large * 1000:9.2f} ms beside {small * 1000:8.2f} ms = "
              f"{large / small:6.2f}x  {verdict}")
    for key, label in (("startup_seconds", "start-up"), ("backup_seconds", "backup"),
                       ("reset_seconds", "reset")):
        print(f"  {label:<38} {results[largest][key]:9.2f} s  beside "
              f"{results[smallest][key]:8.2f} s")


def report_size(messages: int, figures: dict) -> None:
    shape = Shape(messages)
    print(f"  {messages:.0e} messages, {shape.users} users, {scale_data.BOTS} bots: database "
          f"{figures['database_bytes'] / 1e6:.1f} MB = {figures['bytes_per_message']:.0f} "
          f"bytes a message; built in {figures['build_seconds']:.1f} s (cached)")
    for label, samples in figures["calls"].items():
        print(f"    {label:<38} p50 {percentile(samples, 0.5) * 1000:9.2f} ms   "
              f"p99 {percentile(samples, 0.99) * 1000:9.2f} ms   ({len(samples)} calls)")
    print(f"    start-up {figures['startup_seconds']:.2f} s, backup "
          f"{figures['backup_seconds']:.2f} s, reset {figures['reset_seconds']:.2f} s",
          flush=True)
