"""A real botsvc for a test session: what ``scripts/server`` runs, started
from the installed package (gunicorn with the package's settings, 2 workers
each with its scheduler) on a free loopback port and a data dir of its own,
with the testing tools on and webhooks allowed to reach local receivers.
"""
from __future__ import annotations

import contextlib
import glob
import os
import secrets
import signal
import socket
import subprocess
import sys
import time
from pathlib import Path

import requests

import app
from app.media import build_test_signature_db

START_TIMEOUT_SECONDS = 60.0
SYSTEM_CLAMAV_DB = "/var/lib/clamav/*.c[vl]d"


def free_port() -> int:
    with socket.socket() as sock:
        sock.bind(("127.0.0.1", 0))
        return sock.getsockname()[1]


def stop_process_group(process: subprocess.Popen, sig: int = signal.SIGTERM,
                       timeout: float = 10.0) -> None:
    """Signal the group a ``start_new_session`` child leads (gunicorn's master
    and workers); SIGKILL it if it outlives ``timeout``, and SIGKILL any
    worker that outlived its master."""
    with contextlib.suppress(ProcessLookupError):
        os.killpg(process.pid, sig)
    try:
        process.wait(timeout=timeout)
    except subprocess.TimeoutExpired:
        with contextlib.suppress(ProcessLookupError):
            os.killpg(process.pid, signal.SIGKILL)
        process.wait()
    with contextlib.suppress(ProcessLookupError):
        os.killpg(process.pid, signal.SIGKILL)


class LocalServer:
    """``start()`` it, use ``base_url`` and ``admin_token``, ``stop()`` it.
    Its output goes to ``log_path`` (shown when it fails to start)."""

    def __init__(self, data_dir: str | os.PathLike, env: dict[str, str] | None = None):
        self.data_dir = Path(data_dir)
        self.port = free_port()
        self.admin_token = secrets.token_urlsafe(24)
        self.log_path = self.data_dir / "server.log"
        self.env = {**os.environ, **(env or {}),
                    "BOTSVC_BIND": f"127.0.0.1:{self.port}",
                    "BOTSVC_DATA_DIR": str(self.data_dir),
                    "BOTSVC_BASE_URL": self.base_url,
                    "BOTSVC_ADMIN_TOKEN": self.admin_token,
                    "BOTSVC_TEST_TOOLS": "1",
                    "BOTSVC_WEBHOOK_ALLOW_PRIVATE": "1"}
        self.process: subprocess.Popen | None = None

    @property
    def base_url(self) -> str:
        return f"http://127.0.0.1:{self.port}"

    def start(self) -> LocalServer:
        self.data_dir.mkdir(parents=True, exist_ok=True)
        self._offline_signatures()
        package_dir = os.path.dirname(app.__file__)
        argv = [sys.executable, "-m", "gunicorn", "-c",
                os.path.join(package_dir, "gunicorn_conf.py"),
                "app.factory:create_app(start_worker=True)"]
        with open(self.log_path, "ab") as log:
            # Its own session, so that master and workers stop together.
            self.process = subprocess.Popen(argv, env=self.env, stdin=subprocess.DEVNULL,
                                            stdout=log, stderr=log, start_new_session=True,
                                            cwd=self.data_dir)
        try:
            self._wait_until_answering()
        except BaseException:
            self.stop()
            raise
        return self

    def _offline_signatures(self) -> None:
        """As scripts/server: without the system's ClamAV database (an
        offline machine), scan with the test database, which detects only
        the EICAR test file. An explicit setting is left alone."""
        if self.env.get("BOTSVC_CLAMD_SOCKET") or self.env.get("BOTSVC_CLAMAV_DB"):
            return
        if not glob.glob(SYSTEM_CLAMAV_DB):
            self.env["BOTSVC_CLAMAV_DB"] = build_test_signature_db(
                str(self.data_dir / "clamav-test-db"))

    def _wait_until_answering(self) -> None:
        deadline = time.monotonic() + START_TIMEOUT_SECONDS
        while time.monotonic() < deadline:
            if self.process.poll() is not None:
                raise RuntimeError(f"botsvc exited with {self.process.returncode}:\n"
                                   + self.log_tail())
            with contextlib.suppress(requests.RequestException):
                answer = requests.post(f"{self.base_url}/manage/v1/getClock", json={},
                                       headers={"Authorization": f"Bearer {self.admin_token}"},
                                       timeout=2)
                if answer.status_code == 200:
                    return
            time.sleep(0.05)
        raise RuntimeError(f"botsvc did not answer within {START_TIMEOUT_SECONDS:g} s:\n"
                           + self.log_tail())

    def stop(self, timeout: float = 10.0) -> None:
        if self.process is not None:
            stop_process_group(self.process, signal.SIGTERM, timeout)
            self.process = None

    def log_tail(self, lines: int = 40) -> str:
        try:
            return "\n".join(self.log_path.read_text(errors="replace").splitlines()[-lines:])
        except OSError:
            return "(no log)"
