"""A full disk (docs/storage.md "A full disk"): on a real 8 MiB tmpfs,
against the real server (scripts/server, 2 workers) over HTTP, with the
default rate limits. Writes answer 503 STORAGE_FULL with nothing half-written,
reads go on, uploads are refused before their body is read, and the service
recovers by itself, and starts, on a full disk."""
from __future__ import annotations

import contextlib
import json
import os
import sqlite3
import subprocess
import time
from pathlib import Path

import pytest
import requests

from botsvc.devkit.servers import suite_server
from botsvc.media import build_test_signature_db
from botsvc.testkit.server import LocalServer
from tests.support.cli import botsvc
from tests.support.small_disk import fill, small_tmpfs

# Alone: each test fills a small disk to a margin of bytes and reads the
# server's checks against it; two at a time, /readyz once read the disk as
# "ok" mid-test and the module's later tests met the disk still full.
pytestmark = [pytest.mark.server, pytest.mark.alone]

DEFAULT_RATES = {"BOTSVC_RATE_API_PER_SEC": "60", "BOTSVC_RATE_SENDS_PER_SEC": "20",
                 "BOTSVC_RATE_UPLOADS_PER_MIN": "10", "BOTSVC_RATE_BROADCASTS_PER_MIN": "10"}
MIN_FREE = 64 * 1024
STORAGE_FULL = {"ok": False, "error_code": "STORAGE_FULL",
                "description": "The server's disk is full; retry later", "parameters": {}}
EARLY_REFUSAL = {**STORAGE_FULL,
                 "description": "The server's disk is too full to take an upload; retry later"}
TEXT = b"a small text document\n" * 20


@pytest.fixture(scope="module")
def tmpfs(tmp_path_factory) -> Path:
    with small_tmpfs(tmp_path_factory.mktemp("full-disk"), "8m") as mount:
        yield mount


def truncate_wal(db_path: str) -> None:
    """A WAL whose frames were checkpointed is written over in place, needing
    no new blocks; truncated, every write needs the disk. The server's own
    checkpoint job may hold the checkpoint at that moment (the answer's first
    column says busy): then again, until the WAL is empty."""
    conn = sqlite3.connect(db_path)
    deadline = time.monotonic() + 10
    try:
        while True:
            busy = conn.execute("PRAGMA wal_checkpoint(TRUNCATE)").fetchone()[0]
            wal = db_path + "-wal"
            if not busy and (not os.path.exists(wal) or os.path.getsize(wal) == 0):
                return
            assert time.monotonic() < deadline, "the WAL could not be truncated"
            time.sleep(0.05)
    finally:
        conn.close()


@contextlib.contextmanager
def full_disk(mount: Path, db_path: str):
    truncate_wal(db_path)
    filler = fill(mount)
    try:
        yield
    finally:
        filler.unlink()


class Installation:
    def __init__(self, server: LocalServer):
        self.server = server
        created = server.operator("createBot", username="full_disk_bot")
        self.bot_id = created["bot"]["id"]
        self.headers = {"Authorization": f"Bearer {created['token']}"}
        self.user_id = server.operator("createUser")["user_id"]
        self.chat_id = server.operator("userStart", user_id=self.user_id,
                                       bot_id=self.bot_id)["chat_id"]

    def call(self, method: str, headers: dict | None = None, **params) -> requests.Response:
        return requests.post(f"{self.server.base_url}/v2/{method}", json=params,
                             headers={**self.headers, **(headers or {})}, timeout=30)

    def upload(self, body: bytes = TEXT, name: str = "notes.txt", headers: dict | None = None,
               content_type: str = "text/plain"):
        return requests.post(f"{self.server.base_url}/v2/uploadFile",
                             files={"file": (name, body, content_type)},
                             headers={**self.headers, **(headers or {})}, timeout=60)

    def user_get_chat(self) -> requests.Response:
        return requests.post(f"{self.server.base_url}/manage/v1/userGetChat",
                             json={"user_id": self.user_id, "bot_id": self.bot_id},
                             headers=self.server.admin_headers, timeout=30)

    def send(self, text: str, **headers) -> requests.Response:
        return self.call("sendMessage", headers=headers, chat_id=self.chat_id, text=text)


def server_on(mount: Path, **env) -> LocalServer:
    server = suite_server(mount / "data", **DEFAULT_RATES, BOTSVC_MIN_FREE_BYTES=str(MIN_FREE),
                           **env)
    server.log_path = mount.parent / "server.log"   # the log must not need the full disk
    return server


@pytest.fixture(scope="module")
def installation(tmpfs):
    """One server for the module (a start costs seconds); each test leaves
    the disk with room again."""
    server = server_on(tmpfs)
    server.start()
    try:
        yield Installation(server)
    finally:
        server.kill()


def stored_files(data_dir: Path) -> tuple[list[tuple[str, int]], list[tuple[str, int]]]:
    """(rows of clean files, files in storage): name and size of each."""
    conn = sqlite3.connect(data_dir / "botsvc.sqlite3")
    try:
        rows = conn.execute("SELECT storage_name, file_size FROM files"
                            " WHERE status = 'clean'").fetchall()
    finally:
        conn.close()
    storage = data_dir / "files"
    on_disk = sorted((p.name, p.stat().st_size) for p in storage.iterdir()) \
        if storage.exists() else []
    return sorted(rows), on_disk


def transient_files(data_dir: Path) -> list[str]:
    """Quarantine copies, media work files, temporary files: none may stay."""
    found = [str(p.relative_to(data_dir)) for sub in ("quarantine", "media-work")
             if (data_dir / sub).exists() for p in (data_dir / sub).iterdir()]
    found += [p.name for p in data_dir.rglob("*.tmp")]
    return found


def chat_texts(bot: Installation) -> list[str | None]:
    chat = bot.user_get_chat()
    assert chat.status_code == 200, chat.text
    return [m.get("text") for m in chat.json()["result"]["messages"]]


def assert_storage_full(response: requests.Response, body: dict = STORAGE_FULL) -> None:
    assert response.status_code == 503, response.text
    assert response.json() == body


def test_writes_answer_storage_full_reads_go_on_and_it_recovers(installation, tmpfs):
    bot, server = installation, installation.server
    sent = bot.send("before the disk filled")
    assert sent.status_code == 200, sent.text
    uploaded = bot.upload()
    assert uploaded.status_code == 200, uploaded.text
    file_id = uploaded.json()["result"]["file_id"]
    server.operator("userSendMessage", user_id=bot.user_id, bot_id=bot.bot_id, text="hello")
    files_before = stored_files(server.data_dir)
    chat_before = chat_texts(bot)
    assert chat_before[-2:] == ["before the disk filled", "hello"]

    with full_disk(tmpfs, server.db_path):
        # Writes: refused whole, and a refused Idempotency-Key is not kept.
        assert_storage_full(bot.send("no room"))
        assert_storage_full(bot.send("no room", **{"Idempotency-Key": "full-1"}))
        # Reads, with the default rate limits on: each answers, again and again.
        for _ in range(3):
            me = bot.call("getMe")
            assert me.status_code == 200, me.text
            assert me.json()["result"]["username"] == "full_disk_bot"
            polled = bot.call("getUpdates")
            assert polled.status_code == 200, polled.text
            assert [u["message"]["text"] for u in polled.json()["result"]
                    if "message" in u][-1] == "hello"
            got = bot.call("getFile", file_id=file_id)
            assert got.status_code == 200, got.text
            downloaded = requests.get(got.json()["result"]["download_url"], timeout=30)
            assert downloaded.status_code == 200 and downloaded.content == TEXT
            assert chat_texts(bot) == chat_before
        # The installation's own reads: /readyz says why, /metrics still counts.
        ready = requests.get(f"{server.base_url}/readyz", timeout=30)
        assert ready.status_code == 503 and ready.json()["parameters"]["checks"]["disk"] \
            == "low_free_space"
        scraped = requests.get(f"{server.base_url}/metrics", headers=server.admin_headers,
                               timeout=30)
        assert scraped.status_code == 200 and 'method="getMe"' in scraped.text
        # An acknowledgement deletes updates: a write.
        last = polled.json()["result"][-1]["update_id"]
        assert_storage_full(bot.call("getUpdates", offset=last + 1))
        # An upload is refused before its body is read: nothing reaches the quarantine.
        assert_storage_full(bot.upload(headers={"Idempotency-Key": "full-up"}), EARLY_REFUSAL)
        assert transient_files(server.data_dir) == []
        assert stored_files(server.data_dir) == files_before

    # No worker died of the full disk (a sparse metrics file faults as SIGBUS).
    assert "was sent SIG" not in server.log_path.read_text(errors="replace")
    # Space is back: the same process writes again, no restart.
    again = bot.send("room again", **{"Idempotency-Key": "full-1"})
    assert again.status_code == 200, again.text
    assert "Idempotent-Replayed" not in again.headers   # the failed attempt was not stored
    assert again.json()["result"]["text"] == "room again"
    upload = bot.upload(headers={"Idempotency-Key": "full-up"})
    assert upload.status_code == 200, upload.text
    assert "Idempotent-Replayed" not in upload.headers
    rows, on_disk = stored_files(server.data_dir)
    # The quota counts exactly what is stored: one row per file, same sizes.
    assert rows == on_disk and len(rows) == len(files_before[0]) + 1
    assert bot.call("getUpdates", offset=last + 1).status_code == 200
    assert chat_texts(bot) == [*chat_before, "room again"]


def test_an_upload_that_fills_the_disk_leaves_nothing_and_stores_no_key(installation, tmpfs):
    bot, server = installation, installation.server
    before = stored_files(server.data_dir)
    # More free space than the early check asks for, less than the upload.
    filler = fill(tmpfs)
    os.truncate(filler, filler.stat().st_size - 2 * MIN_FREE)
    try:
        big = b"line of text\n" * (4 * MIN_FREE // 13)
        response = bot.upload(big, headers={"Idempotency-Key": "big-1"})
        assert_storage_full(response)
        assert transient_files(server.data_dir) == []
        assert stored_files(server.data_dir) == before
    finally:
        filler.unlink()
    # The key was not kept: the same key with a different file runs now.
    retry = bot.upload(headers={"Idempotency-Key": "big-1"})
    assert retry.status_code == 200, retry.text
    assert "Idempotent-Replayed" not in retry.headers
    rows, on_disk = stored_files(server.data_dir)
    assert rows == on_disk and len(rows) == len(before[0]) + 1


def test_a_conversion_that_fills_the_disk_leaves_nothing_and_frees_its_key(installation, tmpfs,
                                                                           tmp_path):
    bot, server = installation, installation.server
    # 4 s of noise at the lowest quality (about 40 KB): its conversion writes
    # about 200 KB, more than the room left once the body is in.
    video = tmp_path / "noise.mp4"
    subprocess.run(["ffmpeg", "-hide_banner", "-loglevel", "error", "-nostdin", "-y", "-f",
                    "lavfi", "-i", "testsrc2=s=640x480:r=25,noise=alls=100:allf=t+u", "-t", "4",
                    "-c:v", "libx264", "-crf", "51", "-pix_fmt", "yuv420p", str(video)],
                   check=True, timeout=60)
    body = video.read_bytes()
    before = stored_files(server.data_dir)
    truncate_wal(server.db_path)
    filler = fill(tmpfs)
    os.truncate(filler, filler.stat().st_size - 2 * MIN_FREE - len(body))
    try:
        refused = bot.upload(body, "noise.mp4", {"Idempotency-Key": "conv-1"}, "video/mp4")
        assert_storage_full(refused)
        assert transient_files(server.data_dir) == []
        assert stored_files(server.data_dir) == before
    finally:
        filler.unlink()
    # The claim of the key was released, not stored: the same request runs.
    again = bot.upload(body, "noise.mp4", {"Idempotency-Key": "conv-1"}, "video/mp4")
    assert again.status_code == 200, again.text
    assert "Idempotent-Replayed" not in again.headers
    assert again.json()["result"]["kind"] == "video"
    rows, on_disk = stored_files(server.data_dir)
    assert rows == on_disk and len(rows) == len(before[0]) + 1


def test_the_server_starts_on_a_full_disk_and_says_so(installation, tmpfs):
    bot, server = installation, installation.server
    server.kill()
    server.log_path.write_bytes(b"")
    filler = fill(tmpfs)
    try:
        started = time.monotonic()
        server.start()
        assert time.monotonic() - started < 30
        log = server.log_path.read_text(errors="replace")
        warnings = [line for line in log.splitlines()
                    if "the disk under the data dir is full" in line]
        assert len(warnings) == 1, warnings
        assert "Traceback" not in log
        assert "do not work" not in log   # the media tools are not what is wrong
        me = bot.call("getMe")
        assert me.status_code == 200, me.text
        assert bot.user_get_chat().status_code == 200
        # Nothing half-written by the start: no empty or temporary file.
        data = server.data_dir
        empty = [p.name for p in data.rglob("*") if p.is_file() and p.stat().st_size == 0
                 and not p.name.endswith(("-lock", "-wal"))]
        assert empty == [] and transient_files(data) == []
    finally:
        filler.unlink()
    # The start gave back the reserve; filled again, writes are refused.
    with full_disk(tmpfs, server.db_path):
        assert_storage_full(bot.send("no room"))
        assert bot.call("getMe").status_code == 200
    sent = bot.send("room again after the start")
    assert sent.status_code == 200, sent.text


def test_check_media_on_a_full_disk_says_so_in_one_line(tmp_path):
    """No room even for the sample files the check writes: the tools are
    checked as /readyz checks them, and the line names the disk."""
    signatures = tmp_path / "signatures"
    build_test_signature_db(str(signatures))
    with small_tmpfs(tmp_path, "4m") as mount:
        env = {"BOTSVC_DATA_DIR": str(mount / "data"), "BOTSVC_CLAMAV_DB": str(signatures)}
        assert botsvc("migrate", env=env).returncode == 0
        filler = fill(mount)
        try:
            done = botsvc("check-media", env=env)
            assert done.returncode == 0, done.stderr
            [line] = (done.stdout + done.stderr).strip().splitlines()
            assert line == ("media tools and scanner: OK as /readyz checks them (no sample scan:"
                            " the disk under the data dir is full (0 bytes free): uploads answer"
                            " 503 STORAGE_FULL until space is freed)")
            env["BOTSVC_CLAMAV_DB"] = str(tmp_path / "no-signatures")
            done = botsvc("check-media", env=env)
            assert done.returncode == 1   # a tool that is wrong is said as such, in one line
            [line] = (done.stdout + done.stderr).strip().splitlines()
            assert json.loads(line)["parameters"] == {"dependency": "clamav"}
        finally:
            filler.unlink()


def test_the_call_log_is_skipped_on_a_full_disk_and_nothing_fails(installation, tmpfs):
    """The bot's call log is written after each answer, best effort: on a
    full disk the records are dropped, the calls and the log's own reads
    answer as ever, and records are written again once there is room."""
    bot, server = installation, installation.server

    def bot_calls() -> dict:
        return server.operator("getBotCalls", bot_id=bot.bot_id)

    assert bot.call("getMe").status_code == 200
    before = bot_calls()["calls"]
    with full_disk(tmpfs, server.db_path):
        for _ in range(3):
            me = bot.call("getMe")
            assert me.status_code == 200, me.text
            logged = bot_calls()
            assert logged["calls"] == before
    after = bot.call("getMe")
    assert after.status_code == 200, after.text
    deadline = time.monotonic() + 10
    while bot_calls()["calls"] == before and time.monotonic() < deadline:
        time.sleep(0.05)
    newest = bot_calls()["calls"]
    assert newest[0]["request_id"] == after.headers["X-Request-Id"]
    assert newest[1:] == before    # what the full disk refused is not written later
    log = server.log_path.read_text(errors="replace")
    assert "records not written (STORAGE_FULL)" in log
    assert "could not be written" not in log and "was sent SIG" not in log
