"""The real nginx in front of a real botsvc, for tests and benchmarks: the
configuration is rendered from the template scripts/install-service installs
(scripts/frontdoor.py), on a loopback port, with its files in a temporary
directory. The wrapper around it stands for Debian's /etc/nginx/nginx.conf,
which includes it inside its http block.

    with running_server(tmp) as server, running_frontdoor(tmp, server) as door:
        requests.post(f"{door.base_url}/v2/getMe", ...)
"""
from __future__ import annotations

import contextlib
import os
import shutil
import subprocess
import time
from collections.abc import Iterator
from pathlib import Path

import requests

from botsvc.config import Settings
from botsvc.devkit.frontdoor import FrontDoor, render
from botsvc.testkit.server import free_port, stop_process_group

START_TIMEOUT_SECONDS = 20.0
MAIN_CONTEXT = """\
{user}worker_processes 1;
pid {dir}/nginx.pid;
error_log {dir}/nginx.error.log;
events {{ worker_connections 1024; }}
http {{
    client_body_temp_path {dir}/body;
    proxy_temp_path {dir}/proxy;
    fastcgi_temp_path {dir}/fastcgi;
    uwsgi_temp_path {dir}/uwsgi;
    scgi_temp_path {dir}/scgi;
    include {dir}/botsvc.conf;
}}
"""


def nginx_binary() -> str:
    found = shutil.which("nginx") or ("/usr/sbin/nginx" if os.path.exists("/usr/sbin/nginx")
                                       else None)
    if found is None:
        raise RuntimeError("nginx is missing: scripts/test installs it (scripts/bootstrap)")
    return found


def write_configuration(directory: Path, rendered: str) -> None:
    """``rendered`` as botsvc.conf in ``directory``, inside a main context of
    its own (as Debian's nginx.conf includes conf.d/ in its http block)."""
    directory.mkdir(parents=True, exist_ok=True)
    (directory / "botsvc.conf").write_text(rendered)
    # As root, nginx's workers would be nobody, who cannot enter a private tmp dir.
    user = "user root;\n" if os.geteuid() == 0 else ""
    (directory / "nginx.conf").write_text(MAIN_CONTEXT.format(dir=directory, user=user))


def nginx_test(directory: Path) -> subprocess.CompletedProcess:
    """``nginx -t`` on what write_configuration wrote."""
    return subprocess.run([nginx_binary(), "-t", "-p", str(directory), "-c", "nginx.conf"],
                          capture_output=True, text=True, timeout=30)


class FrontDoorProcess:
    def __init__(self, directory: Path, door: FrontDoor):
        self.dir = Path(directory)
        self.door = door
        self.port = int(door.listen[0].rsplit(":", 1)[1].split()[0])
        self.process: subprocess.Popen | None = None

    @property
    def base_url(self) -> str:
        return f"http://127.0.0.1:{self.port}"

    @property
    def access_log(self) -> Path:
        return self.dir / "botsvc.access.log"

    def start(self) -> FrontDoorProcess:
        write_configuration(self.dir, render(self.door))
        checked = nginx_test(self.dir)
        if checked.returncode != 0:
            raise RuntimeError(f"nginx -t refused the configuration:\n{checked.stderr}")
        log = open(self.dir / "nginx.out", "ab")  # noqa: SIM115 - the child keeps writing to it
        try:
            self.process = subprocess.Popen(
                [nginx_binary(), "-p", str(self.dir), "-c", "nginx.conf", "-g", "daemon off;"],
                stdin=subprocess.DEVNULL, stdout=log, stderr=log, start_new_session=True)
        finally:
            log.close()
        deadline = time.monotonic() + START_TIMEOUT_SECONDS
        while time.monotonic() < deadline:
            if self.process.poll() is not None:
                raise RuntimeError("nginx exited:\n" + (self.dir / "nginx.out").read_text())
            with contextlib.suppress(requests.RequestException):
                requests.get(f"{self.base_url}/healthz", timeout=2)
                return self
            time.sleep(0.05)
        raise RuntimeError(f"nginx did not answer within {START_TIMEOUT_SECONDS} s")

    def stop(self) -> None:
        if self.process is not None:
            stop_process_group(self.process)
            self.process = None


@contextlib.contextmanager
def running_frontdoor(directory: Path, server, **options) -> Iterator[FrontDoorProcess]:
    """nginx on a free loopback port in front of ``server`` (a ServerProcess
    or anything with ``port`` and the settings it was started with);
    ``options`` are FrontDoor's (body_max, client_conns, client_rate, ...)."""
    settings = Settings.from_env({name: value for name, value in server.env.items()
                                  if name.startswith("BOTSVC_")}, secret=False)
    door = FrontDoor.for_settings(settings, upstream=f"127.0.0.1:{server.port}",
                                  listen=[f"127.0.0.1:{free_port()}"], log_dir=str(directory),
                                  **options)
    process = FrontDoorProcess(directory, door)
    try:
        yield process.start()
    finally:
        process.stop()
