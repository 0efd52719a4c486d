"""SIGKILL of the real server's process group in the middle of a transcode
(issue 13 point 4): no media tool survives it, what the dead workers left is
gone once the server is up again, and the same Idempotency-Key runs again at
once and succeeds."""
from __future__ import annotations

import contextlib
import os
import sqlite3
import threading
import time
from pathlib import Path

import pytest
import requests

from botsvc import owner
from botsvc.devkit.owners import processes
from botsvc.devkit.servers import running_server
from tests.support.media_files import run_ffmpeg

pytestmark = pytest.mark.server
KEY = "crash-upload-1"


def _tools_working_in(data_dir: Path) -> list[tuple[int, str]]:
    """(pid, name) of every live process whose working directory is inside
    ``data_dir``: the media tools run in their job directory."""
    found = []
    for pid, name, _ in processes():
        try:
            cwd = os.readlink(f"/proc/{pid}/cwd")
        except OSError:
            continue
        if cwd.startswith(str(data_dir) + os.sep):
            found.append((pid, name))
    return found


def _wait_for(condition, seconds: float, what: str):
    deadline = time.monotonic() + seconds
    while True:
        found = condition()
        if found:
            return found
        assert time.monotonic() < deadline, what
        time.sleep(0.05)


def _leftovers(data_dir: Path) -> list[str]:
    return sorted(os.listdir(data_dir / "quarantine")) + sorted(
        os.listdir(data_dir / "media-work") if (data_dir / "media-work").exists() else [])


def test_sigkill_during_a_transcode_leaves_no_tool_no_files_and_no_stuck_key(tmp_path):
    # 30 minutes of stereo sound at 8 kHz: a 7 MB FLAC made in a second, whose
    # conversion to Opus takes several seconds of ffmpeg.
    song = run_ffmpeg(tmp_path / "long.flac", "-f", "lavfi", "-i", "sine=f=440:r=8000:d=1790",
                      "-ac", "2", "-c:a", "flac").read_bytes()
    with running_server(tmp_path) as server:
        created = server.operator("createBot", username="crash_bot")
        url = f"{server.base_url}/v2/uploadFile"
        headers = {"Authorization": f"Bearer {created['token']}", "Idempotency-Key": KEY}

        def upload():
            return requests.post(url, files={"file": ("long.flac", song)}, headers=headers,
                                 timeout=300)

        def upload_until_killed():
            with contextlib.suppress(requests.RequestException):
                upload()

        threading.Thread(target=upload_until_killed, daemon=True).start()
        _wait_for(lambda: [p for p in _tools_working_in(server.data_dir) if p[1] == "ffmpeg"],
                  120, "the transcode never started")
        server.crash()
        # The kernel kills the tools with the workers: none is left converting.
        deadline = time.monotonic() + 5
        while (left := _tools_working_in(server.data_dir)) and time.monotonic() < deadline:
            time.sleep(0.05)
        assert left == [], left
        # What the dead workers left: their quarantine copy and job directory
        # (named after them), and the claim of the key.
        leftovers = _leftovers(server.data_dir)
        assert leftovers and all(owner.owner_of(name) for name in leftovers), leftovers
        conn = sqlite3.connect(server.db_path)
        assert conn.execute("SELECT state FROM idempotency_keys").fetchall() == [("running",)]
        conn.close()

        server.start()
        assert _leftovers(server.data_dir) == []
        conn = sqlite3.connect(server.db_path)
        assert conn.execute("SELECT COUNT(*) FROM idempotency_keys").fetchone()[0] == 0
        conn.close()
        again = requests.post(url, files={"file": ("long.flac", song)}, headers=headers,
                              timeout=300)
        assert again.status_code == 200, again.text
        assert "Idempotent-Replayed" not in again.headers  # it ran: nothing stored before
        assert again.json()["result"]["kind"] == "audio"
        replay = requests.post(url, files={"file": ("long.flac", song)}, headers=headers,
                               timeout=60)
        assert replay.headers["Idempotent-Replayed"] == "true"
        assert _leftovers(server.data_dir) == []
