"""A real botsvc in a child process, started the one way an installation
starts: ``botsvc serve`` of the installed package (migrations, the media
check, gunicorn with 2 workers, each with its scheduler; ``QUICK_ENV``
trims that for the pytest plugin), on a free loopback port and a data dir of
its own (without the system's ClamAV signatures,
``botsvc serve`` scans with the offline test database, which detects only
the EICAR test file). The pytest plugin's session server, and the project's
own tests and benchmarks (devkit/servers.py adds their defaults).

For a bot's tests it turns on the testing tools and lets webhooks reach
local receivers; ``env`` may say otherwise. The server runs in its own
session, so its whole process group (master and workers) stops at once:
``stop()`` (SIGTERM), ``crash()`` (SIGKILL, no clean-up code runs), and
``restart()`` on the same data dir and port.
"""
from __future__ import annotations

import contextlib
import os
import secrets
import signal
import socket
import subprocess
import sys
import time
from pathlib import Path

import requests

START_TIMEOUT_SECONDS = 60.0
# What a bot's tests want unless ``env`` says otherwise.
TESTING_ENV = {"BOTSVC_TEST_TOOLS": "1", "BOTSVC_WEBHOOK_ALLOW_PRIVATE": "1"}
# What the pytest plugin's session server adds (measured with ``scripts/bench
# ci``): one worker (a bot's suite is one client at a time; a second worker
# only competes for the CI machine's cores while booting), and the media tools
# checked by the uploads that use them, not by every start (0.8 s of ffmpeg,
# ClamAV and PDF probes that most suites never need).
QUICK_ENV = {"BOTSVC_WORKERS": "1", "BOTSVC_MEDIA_CHECK": "lazy"}


def free_port() -> int:
    with socket.socket() as sock:
        sock.bind(("127.0.0.1", 0))
        return sock.getsockname()[1]


def _bracketed(host: str) -> str:
    return f"[{host}]" if ":" in host else host


def serve_command() -> list[str]:
    """``botsvc serve`` of the package this module belongs to, run by this
    interpreter: the console script's own entry point, found without PATH."""
    return [sys.executable, "-m", "botsvc.cli", "serve"]


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


def _children_reaped(pid: int) -> bool:
    """Whether the process ``pid`` has no child left, not even one exited
    and not yet reaped (Linux's /proc; elsewhere, False: the caller waits
    for ``pid`` itself)."""
    try:
        with open(f"/proc/{pid}/task/{pid}/children") as fh:
            return not fh.read().split()
    except OSError:
        return False


class LocalServer:
    """``start()`` it, use ``base_url`` and ``admin_token``, ``stop()`` it.
    Its output goes to ``log_path``, beside the data dir (a data dir holds
    only the installation's own files); ``log_tail()`` shows its end.

    ``argv`` replaces ``botsvc serve`` with another command that serves on
    BOTSVC_BIND (a benchmark's bare endpoint): any HTTP answer then counts
    as started."""

    def __init__(self, data_dir: str | os.PathLike, env: dict[str, str] | None = None, *,
                 host: str = "127.0.0.1", port: int | None = None,
                 admin_token: str | None = None, argv: list[str] | None = None):
        self.data_dir = Path(data_dir)
        self.host = host
        self.port = port or free_port()
        self.admin_token = admin_token or secrets.token_urlsafe(24)
        self.argv = argv
        self.log_path = self.data_dir.parent / f"{self.data_dir.name}-server.log"
        self.env = {**os.environ, **TESTING_ENV,
                    **{name: str(value) for name, value in (env or {}).items()},
                    "BOTSVC_BIND": f"{_bracketed(host)}:{self.port}",
                    "BOTSVC_DATA_DIR": str(self.data_dir),
                    "BOTSVC_BASE_URL": self.base_url,
                    "BOTSVC_ADMIN_TOKEN": self.admin_token}
        self.process: subprocess.Popen | None = None

    @property
    def base_url(self) -> str:
        """Where a client on this machine reaches it (a wildcard bind: loopback)."""
        host = "127.0.0.1" if self.host in ("0.0.0.0", "::", "") else _bracketed(self.host)
        return f"http://{host}:{self.port}"

    @property
    def db_path(self) -> str:
        return str(self.data_dir / "botsvc.sqlite3")

    @property
    def admin_headers(self) -> dict[str, str]:
        return {"Authorization": f"Bearer {self.admin_token}"}

    def start(self) -> LocalServer:
        self.data_dir.mkdir(parents=True, exist_ok=True)
        with open(self.log_path, "ab") as log:
            # Its own session, so that master and workers stop together; its
            # own directory, so that nothing in this one shadows the package.
            self.process = subprocess.Popen(self.argv or serve_command(), env=self.env,
                                            stdin=subprocess.DEVNULL, stdout=log, stderr=log,
                                            start_new_session=True, cwd=self.data_dir)
        try:
            self.wait_until_answering()
        except BaseException:
            self.crash()
            raise
        return self

    def wait_until_answering(self, timeout: float = START_TIMEOUT_SECONDS) -> None:
        """Until the operator API answers (any HTTP answer for ``argv``)."""
        deadline = time.monotonic() + timeout
        pause = 0.005   # growing to 50 ms: a quick start is seen when it is ready
        while time.monotonic() < deadline:
            if self.process.poll() is not None:
                raise RuntimeError(f"botsvc exited with {self.process.returncode}:\n"
                                   + self.log_tail())
            with contextlib.suppress(requests.RequestException):
                answer = requests.post(f"{self.base_url}/manage/v1/listBots", json={},
                                       headers=self.admin_headers, timeout=2)
                if answer.status_code == 200 or self.argv:
                    return
            time.sleep(pause)
            pause = min(pause * 1.5, 0.05)
        raise RuntimeError(f"botsvc did not answer within {timeout:g} s:\n" + self.log_tail())

    def operator(self, method: str, **params):
        """``/manage/v1/<method>``'s result (a failure raises, with its body)."""
        answer = requests.post(f"{self.base_url}/manage/v1/{method}", json=params,
                               headers=self.admin_headers, timeout=30)
        if answer.status_code != 200:
            raise RuntimeError(f"{method} failed with {answer.status_code}: {answer.text}")
        return answer.json()["result"]

    def stop(self, timeout: float = 10.0, *, quick: bool = False) -> None:
        """Graceful (SIGTERM): requests in flight finish, kept-alive
        connections linger up to 2 s. ``quick`` (SIGINT, gunicorn's quick
        shutdown: the workers exit at once, cutting any request in flight)
        for a server nobody is calling any more, as at the end of a test
        session: every write was committed before it was answered, so the
        database is whole either way."""
        if not quick or self.process is None:
            self.kill(signal.SIGTERM, timeout)
            return
        # The whole group at once: each worker exits on its own signal, in a
        # few milliseconds (BotsvcWorker.handle_quit; a second quit signal,
        # the master's SIGQUIT, is harmless to it). The master reaps them
        # within its stop loop's first 0.1 s pause, then pauses 0.1 s more
        # and takes 0.1-0.2 s to exit; once it has reaped its workers all it
        # has left to do is log, so it is SIGKILLed then (no worker is left
        # a zombie for init to reap).
        with contextlib.suppress(ProcessLookupError):
            os.killpg(self.process.pid, signal.SIGINT)
        deadline = time.monotonic() + timeout
        pause = 0.002
        while (not _children_reaped(self.process.pid) and self.process.poll() is None
               and time.monotonic() < deadline):
            time.sleep(pause)
            pause = min(pause * 1.5, 0.05)
        self.kill(signal.SIGKILL)

    def kill(self, sig: int = signal.SIGTERM, timeout: float = 10.0) -> None:
        """Signal the whole process group; SIGKILL it if it outlives ``timeout``."""
        if self.process is not None:
            stop_process_group(self.process, sig, timeout)
            self.process = None

    def crash(self) -> None:
        """SIGKILL for master and workers at once: no clean-up code runs."""
        self.kill(signal.SIGKILL)

    def restart(self) -> LocalServer:
        """Stopped (if running) and started again: same data dir, same port."""
        self.stop()
        return self.start()

    def log_tail(self, lines: int = 40) -> str:
        try:
            return "\n".join(self.log_path.read_text(errors="replace").splitlines()[-lines:])
        except OSError:
            return "(no log)"
