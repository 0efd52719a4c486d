"""The real service in a child process (scripts/server: gunicorn, 2 workers,
each with its scheduler), for tests and benchmarks that need real processes.

    with running_server(tmp_path) as server:
        base_url, admin_token = server          # or server.base_url, ...
        requests.post(f"{base_url}/manage/v1/listBots", ...)

The server runs in its own session, so its whole process group (master and
workers) can be killed at once, with SIGKILL for a crash (``server.crash()``)
and at the end of the ``with`` block whatever happened inside it.
"""
from __future__ import annotations

import contextlib
import os
import signal
import subprocess
import time
from collections.abc import Iterator
from pathlib import Path

import requests

from app.testkit.server import free_port, stop_process_group
from tests.support.paths import REPO

ROOT = str(REPO)
SERVER_SCRIPT = REPO / "scripts" / "server"
ADMIN_TOKEN = "server-process-admin-token"
# As in conftest: tests measure behaviour, not the rate limits, unless they ask.
NO_RATE_LIMITS_ENV = {"BOTSVC_RATE_API_PER_SEC": "0", "BOTSVC_RATE_SENDS_PER_SEC": "0",
                      "BOTSVC_RATE_UPLOADS_PER_MIN": "0", "BOTSVC_RATE_BROADCASTS_PER_MIN": "0"}
START_TIMEOUT_SECONDS = 60.0


class ServerProcess:
    """One run of scripts/server on a data dir; start it again after a crash
    with ``restart()`` (same data dir, same port)."""

    def __init__(self, data_dir: Path, port: int | None = None, argv: list | None = None,
                 **env: str):
        self.argv = argv or [str(SERVER_SCRIPT)]   # the bench's bare endpoint replaces it
        self.data_dir = Path(data_dir)
        self.port = port or free_port()
        self.admin_token = ADMIN_TOKEN
        self.env = {**os.environ, **NO_RATE_LIMITS_ENV, "BOTSVC_ACCESS_LOG": "0",
                    **{name: str(value) for name, value in env.items()},
                    "BOTSVC_BIND": f"127.0.0.1:{self.port}",
                    "BOTSVC_DATA_DIR": str(self.data_dir),
                    "BOTSVC_ADMIN_TOKEN": self.admin_token}
        self.log_path = self.data_dir.parent / f"{self.data_dir.name}-server.log"
        self.process: subprocess.Popen | None = None

    @property
    def base_url(self) -> str:
        return f"http://127.0.0.1:{self.port}"

    @property
    def db_path(self) -> str:
        return str(self.data_dir / "botsvc.sqlite3")

    def __iter__(self):
        return iter((self.base_url, self.admin_token))

    def start(self) -> ServerProcess:
        self.data_dir.mkdir(parents=True, exist_ok=True)
        log = open(self.log_path, "ab")  # noqa: SIM115 - the child keeps writing to it
        try:
            self.process = subprocess.Popen(self.argv, env=self.env, cwd=REPO,
                                            stdin=subprocess.DEVNULL, stdout=log, stderr=log,
                                            start_new_session=True)
        finally:
            log.close()
        try:
            self.wait_until_answering()
        except BaseException:
            self.kill(signal.SIGKILL)
            raise
        return self

    def wait_until_answering(self, timeout: float = START_TIMEOUT_SECONDS) -> None:
        deadline = time.monotonic() + timeout
        while time.monotonic() < deadline:
            if self.process.poll() is not None:
                raise RuntimeError(f"server exited with {self.process.returncode}:\n"
                                   + self.log_tail())
            with contextlib.suppress(requests.RequestException):
                # Any HTTP answer means it serves (the bench's bare endpoint has no
                # /manage/); the real server must also have its operator API up.
                answer = requests.post(f"{self.base_url}/manage/v1/listBots", json={},
                                       headers=self.admin_headers, timeout=2)
                if answer.status_code == 200 or self.argv[0] != str(SERVER_SCRIPT):
                    return
            time.sleep(0.1)
        raise RuntimeError(f"server did not answer within {timeout} s:\n" + self.log_tail())

    @property
    def admin_headers(self) -> dict:
        return {"Authorization": f"Bearer {self.admin_token}"}

    def kill(self, sig: int = signal.SIGTERM, timeout: float = 10.0) -> None:
        """Signal the whole process group; SIGKILL it if it outlives ``timeout``."""
        if self.process is not None:
            stop_process_group(self.process, sig, timeout)
            self.process = None

    def operator(self, method: str, **params):
        """Call /manage/v1 and return the result (asserting success)."""
        answer = requests.post(f"{self.base_url}/manage/v1/{method}", json=params,
                               headers=self.admin_headers, timeout=30)
        assert answer.status_code == 200, answer.text
        return answer.json()["result"]

    def crash(self) -> None:
        """SIGKILL for master and workers at once: no clean-up code runs."""
        self.kill(signal.SIGKILL)

    def restart(self) -> ServerProcess:
        self.kill()
        return self.start()

    def log_tail(self, lines: int = 40) -> str:
        try:
            return "\n".join(self.log_path.read_text(errors="replace").splitlines()[-lines:])
        except OSError:
            return "(no log)"


@contextlib.contextmanager
def running_server(tmp_path: Path, argv: list | None = None, **env: str
                   ) -> Iterator[ServerProcess]:
    """A started server on a free loopback port and a data dir under
    ``tmp_path``; rate limits off unless ``env`` sets them (BOTSVC_* names).
    Unpacks as ``(base_url, admin_token)``; the process group is killed at exit."""
    server = ServerProcess(Path(tmp_path) / "server-data", argv=argv, **env)
    try:
        yield server.start()
    finally:
        server.kill()
