"""The restore drill (docs/production.md): a real server replicating with the
real Litestream to a file replica, keyed sends, new bots and chats and a
broadcast under way; then the whole process tree SIGKILLed and its data dir
deleted (the VM is gone); ``botsvc restore-replica`` into a new data dir and
a server on it. Every write acknowledged more than the sync interval before
the loss must be there; the recovery point measured is printed. The restored
server replicates on to the same replica and is stopped as systemd stops it."""
from __future__ import annotations

import shutil
import signal
import sqlite3
import subprocess
import sys
import threading
import time

import pytest
import requests

from botsvc.devkit.members import add_members
from botsvc.devkit.servers import suite_server
from botsvc.replication import SYNC_INTERVAL_SECONDS

MEMBERS = 1000
SEND_RATE = 200          # per bot and second: the broadcast takes 5 s, the loss lands in it
WRITING_SECONDS = 3.0


class Writers:
    """Threads writing through the API, each write noted with the moment
    its answer arrived (it was committed before that)."""

    def __init__(self, server, sender: dict, broadcaster: dict, broadcast_id: int):
        self.server, self.sender, self.broadcaster = server, sender, broadcaster
        self.broadcast_id = broadcast_id
        self.sends: list[tuple[float, str, int]] = []        # (acked, key, message_id)
        self.bots: list[tuple[float, int, str]] = []         # (acked, bot_id, token)
        self.chats: list[tuple[float, str]] = []             # (acked, chat_id)
        self.progress: list[tuple[float, int]] = []          # (acked, broadcast sent)
        self.stop = threading.Event()
        self.threads = [threading.Thread(target=work, daemon=True)
                        for work in (self._send, self._make_bots, self._watch_broadcast)]

    def __enter__(self) -> Writers:
        for thread in self.threads:
            thread.start()
        return self

    def __exit__(self, *exc) -> None:
        self.stop.set()
        for thread in self.threads:
            thread.join(30)

    def _post(self, path: str, token: str, body: dict, **headers) -> dict | None:
        try:
            answer = requests.post(f"{self.server.base_url}{path}", json=body, timeout=5,
                                   headers={"Authorization": f"Bearer {token}", **headers})
        except requests.RequestException:
            return None   # the server is gone: not acknowledged
        return answer.json()["result"] if answer.status_code == 200 else None

    def _send(self) -> None:
        n = 0
        while not self.stop.is_set():
            n += 1
            key = f"drill-{n}"
            sent = self._post("/v2/sendMessage", self.sender["token"],
                              {"chat_id": self.sender["chat_id"], "text": key},
                              **{"Idempotency-Key": key})
            if sent is not None:
                self.sends.append((time.time(), key, sent["message_id"]))
            time.sleep(0.02)

    def _make_bots(self) -> None:
        n = 0
        while not self.stop.is_set():
            n += 1
            bot = self._post("/manage/v1/createBot", self.server.admin_token,
                             {"username": f"drill{n}_bot"})
            if bot is not None:
                self.bots.append((time.time(), bot["bot"]["id"], bot["token"]))
            user = self._post("/manage/v1/createUser", self.server.admin_token, {})
            started = user and self._post("/manage/v1/userStart", self.server.admin_token,
                                          {"user_id": user["user_id"],
                                           "bot_id": self.sender["id"]})
            if started:
                self.chats.append((time.time(), started["chat_id"]))
            time.sleep(0.1)

    def _watch_broadcast(self) -> None:
        while not self.stop.is_set():
            got = self._post("/v2/getBroadcast", self.broadcaster["token"],
                             {"broadcast_id": self.broadcast_id})
            if got is not None:
                self.progress.append((time.time(), got["counts"]["sent"]))
            time.sleep(0.1)


def _bot(server, name: str) -> dict:
    created = server.operator("createBot", username=name)
    return {"id": created["bot"]["id"], "token": created["token"]}


def _restore(data_dir, replica) -> tuple[float, str]:
    env = {"BOTSVC_DATA_DIR": str(data_dir), "BOTSVC_REPLICA": str(replica),
           "PATH": "/usr/bin:/bin"}
    started = time.monotonic()
    done = subprocess.run([sys.executable, "-m", "botsvc.cli", "restore-replica"], env=env,
                          capture_output=True, text=True, timeout=120)
    assert done.returncode == 0, done.stderr
    return time.monotonic() - started, done.stdout.strip()


@pytest.mark.server
@pytest.mark.alone   # the loss is measured in seconds
def test_a_lost_machine_loses_only_the_last_second(tmp_path):
    replica = tmp_path / "replica"
    env = {"BOTSVC_REPLICA": str(replica), "BOTSVC_RATE_SENDS_PER_SEC": SEND_RATE}
    server = suite_server(tmp_path / "data", **env).start()
    try:
        broadcaster, sender = _bot(server, "caster_bot"), _bot(server, "sender_bot")
        user = server.operator("createUser")["user_id"]
        sender["chat_id"] = server.operator("userStart", user_id=user,
                                            bot_id=sender["id"])["chat_id"]
        add_members(server.db_path, broadcaster["id"], MEMBERS)
        created = requests.post(f"{server.base_url}/v2/createBroadcast", timeout=10,
                                headers={"Authorization": f"Bearer {broadcaster['token']}"},
                                json={"method": "sendMessage", "payload": {"text": "all"}})
        broadcast_id = created.json()["result"]["broadcast_id"]
        with Writers(server, sender, broadcaster, broadcast_id) as writers:
            time.sleep(WRITING_SECONDS)
            lost_at = time.time()
            server.crash()   # Litestream, gunicorn's master and workers: SIGKILL at once
        shutil.rmtree(server.data_dir)
    finally:
        server.kill()

    seconds, said = _restore(tmp_path / "restored", replica)
    print(f"restore: {seconds:.2f} s: {said}")
    # Each kind of write happened, before and during the loss's last second.
    assert writers.sends and writers.bots and writers.chats and writers.progress
    sent_before = [sent for at, sent in writers.progress if at < lost_at - 1]
    assert 0 < sent_before[-1] < MEMBERS, "the loss must land while the broadcast is under way"

    db = sqlite3.connect(tmp_path / "restored" / "botsvc.sqlite3")
    kept_messages = {row[0] for row in db.execute(
        "SELECT message_id FROM messages m JOIN chats c ON c.id = m.chat_ref"
        " WHERE c.chat_id = ? AND m.from_bot = 1", (sender["chat_id"],))}
    kept_bots = {row[0] for row in db.execute("SELECT id FROM bots")}
    kept_chats = {row[0] for row in db.execute("SELECT chat_id FROM chats")}
    restored_sent = db.execute("SELECT sent FROM broadcasts WHERE broadcast_id = ?",
                               (broadcast_id,)).fetchone()[0]
    db.close()
    lost = sorted([at for at, _, mid in writers.sends if mid not in kept_messages]
                  + [at for at, bot_id, _ in writers.bots if bot_id not in kept_bots]
                  + [at for at, chat_id in writers.chats if chat_id not in kept_chats])
    newest = max(at for at, *_ in writers.sends + writers.bots + writers.chats)
    # How old, at the loss, the oldest lost write was (one answered while
    # the kill landed counts as 0).
    recovery_point = max(lost_at - lost[0], 0.0) if lost else 0.0
    print(f"recovery point {recovery_point:.2f} s (sync interval {SYNC_INTERVAL_SECONDS:g} s):"
          f" {len(lost)} writes lost of {len(writers.sends + writers.bots + writers.chats)},"
          f" the newest acknowledged {max(lost_at - newest, 0):.2f} s before the loss;"
          f" broadcast {restored_sent} sent restored, {sent_before[-1]} acknowledged")
    assert recovery_point <= SYNC_INTERVAL_SECONDS, lost
    assert restored_sent >= sent_before[-1]

    server = suite_server(tmp_path / "restored", **env).start()
    try:
        _check_served(server, writers, sender, broadcaster, broadcast_id, lost_at)
        last = _stop_as_systemd_does(server)
    finally:
        server.kill()
    # The restored server replicated on to the same replica, to its last write.
    _restore(tmp_path / "restored-again", replica)
    db = sqlite3.connect(tmp_path / "restored-again" / "botsvc.sqlite3")
    assert db.execute("SELECT username FROM bots WHERE id = ?",
                      (last["bot"]["id"],)).fetchone() == ("last_bot",)
    db.close()


def _stop_as_systemd_does(server) -> dict:
    """SIGTERM to the main process only (KillMode=mixed): Litestream passes
    it on, gunicorn's master stops its workers and exits, then Litestream
    ships what was left and exits 0. A bot made just before is in the replica."""
    last = server.operator("createBot", username="last_bot")
    server.process.send_signal(signal.SIGTERM)   # Litestream: the pid `botsvc serve` had
    assert server.process.wait(30) == 0, server.log_tail()
    log = server.log_tail(15)
    assert "Handling signal: term" in log and "Shutting down: Master" in log
    assert log.splitlines()[-1].endswith('msg="litestream shut down"'), log
    return last


def _check_served(server, writers, sender, broadcaster, broadcast_id, lost_at) -> None:
    """The restored installation serves what was written: old tokens work, a
    keyed send replays, and the broadcast finishes, each member once."""
    cutoff = lost_at - SYNC_INTERVAL_SECONDS
    _, bot_id, token = [bot for bot in writers.bots if bot[0] < cutoff][-1]
    me = requests.post(f"{server.base_url}/v2/getMe", timeout=10,
                       headers={"Authorization": f"Bearer {token}"}).json()
    assert me["result"]["id"] == bot_id
    _, key, message_id = [send for send in writers.sends if send[0] < cutoff][-1]
    again = requests.post(f"{server.base_url}/v2/sendMessage", timeout=10,
                          headers={"Authorization": f"Bearer {sender['token']}",
                                   "Idempotency-Key": key},
                          json={"chat_id": sender["chat_id"], "text": key})
    assert again.headers.get("Idempotent-Replayed") == "true"
    assert again.json()["result"]["message_id"] == message_id
    deadline = time.monotonic() + 60
    while True:
        got = requests.post(f"{server.base_url}/v2/getBroadcast", timeout=10,
                            headers={"Authorization": f"Bearer {broadcaster['token']}"},
                            json={"broadcast_id": broadcast_id}).json()["result"]
        if got["status"] == "completed":
            break
        assert time.monotonic() < deadline, got
        time.sleep(0.2)
    assert got["counts"] == {"queued": 0, "sent": MEMBERS, "failed": 0, "cancelled": 0}
    db = sqlite3.connect(server.db_path)
    counts = {row[0] for row in db.execute(
        "SELECT COUNT(m.message_id) FROM chats c LEFT JOIN messages m ON m.chat_ref = c.id"
        " AND m.from_bot = 1 WHERE c.bot_id = ? GROUP BY c.id", (broadcaster["id"],))}
    db.close()
    assert counts == {1}

