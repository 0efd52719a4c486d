"""botsvc backup / restore: a backup taken from a real server
(scripts/server, 2 workers) in the middle of a load of sends, user messages
and uploads is a consistent snapshot; restored into a new data dir, a server
started on it serves the same bots (tokens valid), chats, messages, pending
updates and files (same bytes, same file_ids, signed URLs still valid)."""
from __future__ import annotations

import contextlib
import json
import os
import sqlite3
import subprocess
import sys
import threading
import time
from pathlib import Path
from urllib.parse import urlsplit

import pytest
import requests
from click.testing import CliRunner

from botsvc import cli
from botsvc.devkit.servers import running_server, suite_server

pytestmark = pytest.mark.server
BOTSVC = str(Path(sys.executable).parent / "botsvc")
BOTS, USERS_PER_BOT = 2, 3


def botsvc(data_dir: Path, *args: str) -> subprocess.CompletedProcess:
    env = {key: value for key, value in os.environ.items() if not key.startswith("BOTSVC_")}
    return subprocess.run([BOTSVC, *args], env={**env, "BOTSVC_DATA_DIR": str(data_dir)},
                          capture_output=True, text=True, timeout=120)


def call(base_url: str, token: str, method: str, **params):
    answer = requests.post(f"{base_url}/v2/{method}", json=params, timeout=60,
                           headers={"Authorization": f"Bearer {token}"})
    assert answer.status_code == 200, answer.text
    return answer.json()["result"]


def upload(base_url: str, token: str, i: int) -> dict:
    body = f"backup test document {i}\n".encode() * (50 + i)
    answer = requests.post(f"{base_url}/v2/uploadFile", timeout=60,
                           headers={"Authorization": f"Bearer {token}"},
                           files={"file": (f"note-{i}.txt", body, "text/plain")})
    assert answer.status_code == 200, answer.text
    return answer.json()["result"]


def relative(url: str) -> str:
    parts = urlsplit(url)
    return f"{parts.path}?{parts.query}"


class Load:
    """Sends, user messages and uploads from several threads until stopped."""

    def __init__(self, server, bots):
        self.server, self.bots = server, bots
        self.stop, self.errors = threading.Event(), []
        self.done = {"send": 0, "user": 0, "upload": 0}
        self.lock = threading.Lock()
        self.threads = [threading.Thread(target=self.run, args=(kind, bot), daemon=True)
                        for bot in bots for kind in self.done]

    def run(self, kind, bot):
        i = 0
        try:
            while not self.stop.is_set():
                i += 1
                chat = bot["chats"][i % len(bot["chats"])]
                if kind == "send":
                    call(self.server.base_url, bot["token"], "sendMessage",
                         chat_id=chat["chat_id"], text=f"bot says {i}")
                    time.sleep(0.01)   # leave room for the others on two cores
                elif kind == "user":
                    self.server.operator("userSendMessage", user_id=chat["user_id"],
                                         bot_id=bot["id"], text=f"user says {i}")
                else:
                    upload(self.server.base_url, bot["token"], i)
                with self.lock:
                    self.done[kind] += 1
        except Exception as error:   # reported by the test
            self.errors.append(error)

    def __enter__(self):
        for thread in self.threads:
            thread.start()
        return self

    def wait_for(self, counts: dict, timeout: float = 60.0):
        """Until every kind of work has done at least ``counts[kind]``."""
        deadline = time.monotonic() + timeout
        while any(self.done[kind] < count for kind, count in counts.items()):
            assert not self.errors, self.errors
            assert time.monotonic() < deadline, self.done
            time.sleep(0.05)

    def __exit__(self, *exc):
        self.stop.set()
        for thread in self.threads:
            thread.join(60)


def installation(server) -> list[dict]:
    bots = []
    for n in range(BOTS):
        created = server.operator("createBot", username=f"backup{n}_bot")
        bot = {"id": created["bot"]["id"], "token": created["token"], "chats": []}
        for _ in range(USERS_PER_BOT):
            user = server.operator("createUser")["user_id"]
            started = server.operator("userStart", user_id=user, bot_id=bot["id"])
            bot["chats"].append({"user_id": user, "chat_id": started["chat_id"]})
        bots.append(bot)
    return bots


def snapshot_of(backup_dir: Path) -> dict:
    conn = sqlite3.connect(backup_dir / "botsvc.sqlite3")
    try:
        return {"messages": conn.execute("SELECT count(*) FROM messages").fetchone()[0],
                "updates": conn.execute("SELECT count(*) FROM updates").fetchone()[0],
                "file_ids": {row[0] for row in conn.execute("SELECT file_id FROM files")}}
    finally:
        conn.close()


def served_state(server, bots) -> dict:
    """What a server shows of the installation: per chat the messages, per bot
    the pending updates and its files' bytes (by file_id)."""
    state = {"bots": server.operator("listBots"), "chats": {}, "updates": {}}
    for bot in bots:
        state["updates"][bot["id"]] = all_updates(server, bot["token"])
        for chat in bot["chats"]:
            state["chats"][chat["chat_id"]] = server.operator(
                "userGetChat", user_id=chat["user_id"], bot_id=bot["id"])["messages"]
    return state


def all_updates(server, token: str) -> list[dict]:
    """Every pending update, page by page (the pages acknowledge what they passed)."""
    found, offset = [], 0
    while page := call(server.base_url, token, "getUpdates", offset=offset, limit=100):
        found += page
        offset = page[-1]["update_id"] + 1
    return found


def download(server, path: str) -> bytes:
    answer = requests.get(server.base_url + path, timeout=60)
    assert answer.status_code == 200, answer.text
    return answer.content


@pytest.mark.alone
def test_a_backup_under_load_restores_to_a_server_that_serves_the_same(tmp_path):
    backup_dir, restored_dir = tmp_path / "backup", tmp_path / "restored"
    env = {"BOTSVC_CLAMAV_DB": "", "BOTSVC_CLAMD_SOCKET": ""}   # the offline signatures
    with running_server(tmp_path / "live", **env) as live:
        bots = installation(live)
        early = upload(live.base_url, bots[0]["token"], 0)
        early_link = relative(call(live.base_url, bots[0]["token"], "getFile",
                                   file_id=early["file_id"])["download_url"])
        with Load(live, bots) as load:
            load.wait_for(dict.fromkeys(load.done, 2))
            done = botsvc(live.data_dir, "backup", str(backup_dir))
            # The service goes on meanwhile and after.
            load.wait_for({kind: count + 1 for kind, count in load.done.items()})
        assert not load.errors, load.errors
        assert done.returncode == 0, done.stderr
        assert "integrity ok" in done.stdout and "SHA-256 verified" in done.stdout
        assert "copying the database" in done.stderr
        live_state = served_state(live, bots)
        file_ids = {bot["id"]: [] for bot in bots}
        snapshot = snapshot_of(backup_dir)
        live_db = sqlite3.connect(live.db_path)
        for file_id, bot_id in live_db.execute("SELECT file_id, bot_id FROM files"):
            if file_id in snapshot["file_ids"]:
                file_ids[bot_id].append(file_id)
        live_db.close()
        links = {file_id: relative(call(live.base_url, bot["token"], "getFile",
                                        file_id=file_id)["download_url"])
                 for bot in bots for file_id in file_ids[bot["id"]]}
        live_bytes = {file_id: download(live, link) for file_id, link in links.items()}

    # The snapshot holds work from during the load, and not all of it.
    assert snapshot["messages"] > 0 and len(snapshot["file_ids"]) > 1
    assert early["file_id"] in snapshot["file_ids"]
    assert len(snapshot["file_ids"]) < sum(1 for _ in live_bytes) + load.done["upload"]

    restored = botsvc(restored_dir, "restore", str(backup_dir))
    assert restored.returncode == 0, restored.stderr
    assert f"{len(snapshot['file_ids'])} stored files" in restored.stdout

    server = suite_server(restored_dir, **env)
    with contextlib.ExitStack() as stack:
        stack.callback(server.kill)
        server.start()
        state = served_state(server, bots)   # every token still valid (200 asserted)
        assert state["bots"] == live_state["bots"]
        total_messages = 0
        for chat_id, messages in state["chats"].items():
            assert messages == live_state["chats"][chat_id][:len(messages)]
            total_messages += len(messages)
        assert total_messages == snapshot["messages"]
        total_updates = 0
        for bot_id, updates in state["updates"].items():
            assert updates == live_state["updates"][bot_id][:len(updates)]
            total_updates += len(updates)
        assert total_updates == snapshot["updates"] > 0
        for file_id, link in links.items():           # links signed by the live server
            assert download(server, link) == live_bytes[file_id]
        assert download(server, early_link) == live_bytes[early["file_id"]]
        for bot in bots:
            for file_id in file_ids[bot["id"]]:
                assert call(server.base_url, bot["token"], "getFile",
                            file_id=file_id)["file_id"] == file_id
        # New work goes on after the restore.
        chat = bots[0]["chats"][0]
        sent = call(server.base_url, bots[0]["token"], "sendMessage",
                    chat_id=chat["chat_id"], text="after the restore")
        assert sent["message_id"] > max(m["message_id"] for m in state["chats"][chat["chat_id"]])


def run_cli(monkeypatch, data_dir: Path, *args: str):
    """The botsvc command in this process (the test above runs the real one)."""
    monkeypatch.setenv("BOTSVC_DATA_DIR", str(data_dir))
    return CliRunner().invoke(cli.main, list(args))


def test_refusals_are_one_line_and_leave_nothing_behind(tmp_path, monkeypatch):
    data_dir, copy, target = tmp_path / "data", tmp_path / "copy", tmp_path / "target"
    assert run_cli(monkeypatch, data_dir, "migrate").exit_code == 0
    assert run_cli(monkeypatch, data_dir, "create-bot", "first_bot").exit_code == 0
    made = run_cli(monkeypatch, data_dir, "backup", str(copy))
    assert made.exit_code == 0, made.output
    # restore fills an empty data dir only; a backup never goes over an old one.
    refused = run_cli(monkeypatch, data_dir, "restore", str(copy))
    assert refused.exit_code == 1
    assert str(refused.exception).startswith("botsvc: restore failed: the data dir")
    again = run_cli(monkeypatch, data_dir, "backup", str(copy))
    assert again.exit_code == 1 and "not an empty directory" in str(again.exception)
    # A backup whose database names fewer files than it promised is incomplete.
    manifest = json.loads((copy / "backup.json").read_text())
    manifest["files"] = 3
    (copy / "backup.json").write_text(json.dumps(manifest))
    damaged = run_cli(monkeypatch, target, "restore", str(copy))
    assert damaged.exit_code == 1 and "incomplete" in str(damaged.exception)
    assert not target.exists()
    # No installation: nothing to back up, and nothing created on the way.
    nothing = run_cli(monkeypatch, tmp_path / "none", "backup", str(tmp_path / "x"))
    assert nothing.exit_code == 1 and "no installation" in str(nothing.exception)
    assert not (tmp_path / "none").exists() and not (tmp_path / "x").exists()


def test_restore_fills_a_data_dir_holding_only_the_disk_reserve(tmp_path, monkeypatch):
    from botsvc.disk import RESERVE_NAME

    data_dir, copy, target = tmp_path / "data", tmp_path / "copy", tmp_path / "target"
    assert run_cli(monkeypatch, data_dir, "migrate").exit_code == 0
    assert run_cli(monkeypatch, data_dir, "create-bot", "first_bot").exit_code == 0
    assert run_cli(monkeypatch, data_dir, "backup", str(copy)).exit_code == 0
    target.mkdir()
    (target / RESERVE_NAME).write_bytes(b"\0" * 1024)   # what a start on this dir leaves
    restored = run_cli(monkeypatch, target, "restore", str(copy))
    assert restored.exit_code == 0, restored.output
    assert (target / "botsvc.sqlite3").is_file() and (target / RESERVE_NAME).is_file()
    (target / "stray").write_text("data")
    refused = run_cli(monkeypatch, target, "restore", str(copy))
    assert refused.exit_code == 1 and "is not empty" in str(refused.exception)
