"""The real service for the suite's tests and the benchmarks: the testing
kit's launcher (app/botsvc/testkit/server.py, ``botsvc serve``) with the suite's
defaults.

    with running_server(tmp_path) as server:
        requests.post(f"{server.base_url}/manage/v1/listBots",
                      headers=server.admin_headers, json={})

Tests measure behaviour, not the rate limits, unless they set them
(BOTSVC_RATE_*); the access log is off unless asked (BOTSVC_ACCESS_LOG=1);
the testing tools and private webhook addresses are off, as in production,
unless a test turns them on. The process group is killed at the end of the
``with`` block, whatever happened inside it.
"""
from __future__ import annotations

import contextlib
from collections.abc import Iterator
from pathlib import Path

from botsvc.testkit.server import LocalServer

ADMIN_TOKEN = "server-process-admin-token"
NO_RATE_LIMITS_ENV = {"BOTSVC_RATE_API_PER_SEC": "0", "BOTSVC_RATE_SENDS_PER_SEC": "0",
                      "BOTSVC_RATE_UPLOADS_PER_MIN": "0", "BOTSVC_RATE_BROADCASTS_PER_MIN": "0"}
SUITE_ENV = {**NO_RATE_LIMITS_ENV, "BOTSVC_ACCESS_LOG": "0", "BOTSVC_TEST_TOOLS": "0",
             "BOTSVC_WEBHOOK_ALLOW_PRIVATE": "0"}


def suite_server(data_dir: Path, port: int | None = None, argv: list[str] | None = None,
                 **env: str | int) -> LocalServer:
    """A server (not started) on ``data_dir`` with the suite's defaults;
    ``env`` (BOTSVC_* names, or PATH) wins over them."""
    return LocalServer(data_dir, {**SUITE_ENV, **{k: str(v) for k, v in env.items()}},
                       port=port, admin_token=ADMIN_TOKEN, argv=argv)


@contextlib.contextmanager
def running_server(tmp_path: Path, argv: list[str] | None = None, **env: str | int
                   ) -> Iterator[LocalServer]:
    """A started server on a free loopback port and a data dir under ``tmp_path``."""
    server = suite_server(Path(tmp_path) / "server-data", argv=argv, **env)
    try:
        yield server.start()
    finally:
        # Quick: nobody calls it any more, and a graceful stop waited up to 2 s
        # for the test's idle kept-alive connections (13 of 19 stops in a
        # sample of the server lane, 2.6 s each). A test of the graceful stop
        # calls server.stop() itself, which leaves nothing for this one.
        server.stop(quick=True)
