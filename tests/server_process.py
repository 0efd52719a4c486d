"""Start the real service (scripts/server: gunicorn, 2 workers, schedulers) for
tests that cross processes. The server runs in its own process group, so a
test can SIGKILL all of it at once, as a crash would."""
from __future__ import annotations

import contextlib
import os
import signal
import socket
import subprocess
import time
from dataclasses import dataclass

import requests

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
ADMIN_TOKEN = "server-test-admin-token"


def free_port() -> int:
    with socket.socket() as sock:
        sock.bind(("127.0.0.1", 0))
        return sock.getsockname()[1]


@dataclass
class ServerProcess:
    base_url: str
    admin_token: str
    data_dir: str
    env: dict
    process: subprocess.Popen | None = None
    log_path: str = ""
    argv: list | None = None   # default: scripts/server

    def start(self, timeout: float = 60.0) -> None:
        log = open(self.log_path, "ab")
        self.process = subprocess.Popen(
            self.argv or [os.path.join(ROOT, "scripts", "server")], env=self.env, stdout=log,
            stderr=subprocess.STDOUT, stdin=subprocess.DEVNULL, start_new_session=True)
        deadline = time.monotonic() + timeout
        while time.monotonic() < deadline:
            if self.process.poll() is not None:
                raise RuntimeError(f"server exited early; see {self.log_path}")
            try:
                requests.post(f"{self.base_url}/v2/getMe", timeout=1)
                return
            except requests.ConnectionError:
                time.sleep(0.1)
        raise RuntimeError(f"server did not answer within {timeout} s; see {self.log_path}")

    def kill(self, sig: int = signal.SIGKILL) -> None:
        if self.process is None or self.process.poll() is not None:
            return
        with contextlib.suppress(ProcessLookupError):
            os.killpg(self.process.pid, sig)
        self.process.wait(timeout=30)

    def stop(self) -> None:
        self.kill(signal.SIGTERM)

    def operator(self, method: str, **params):
        response = requests.post(f"{self.base_url}/manage/v1/{method}", json=params,
                                 headers={"Authorization": f"Bearer {self.admin_token}"},
                                 timeout=30)
        assert response.status_code == 200, response.text
        return response.json()["result"]


@contextlib.contextmanager
def running_server(tmp_path, argv: list | None = None, **env):
    """A started server on a free loopback port; ``env`` adds BOTSVC_* settings.
    ``argv`` replaces scripts/server (the bench's bare endpoint uses it)."""
    port = free_port()
    data_dir = str(tmp_path / "server-data")
    full_env = {**os.environ, "BOTSVC_BIND": f"127.0.0.1:{port}", "BOTSVC_DATA_DIR": data_dir,
                "BOTSVC_ADMIN_TOKEN": ADMIN_TOKEN, "BOTSVC_ACCESS_LOG": "0",
                **{k: str(v) for k, v in env.items()}}
    server = ServerProcess(f"http://127.0.0.1:{port}", ADMIN_TOKEN, data_dir, full_env,
                           log_path=str(tmp_path / "server.log"), argv=argv)
    server.start()
    try:
        yield server
    finally:
        server.kill()
