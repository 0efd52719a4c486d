"""The one launcher of real servers (app/botsvc/testkit/server.py) without starting
one: what it runs, with which environment, where its log goes, and the
suite's guard that refuses a start from a test without the server marker
(so the fast lane never starts a server)."""
from __future__ import annotations

import sys
import time

import pytest

from botsvc.devkit.servers import NO_RATE_LIMITS_ENV, suite_server
from botsvc.testkit.server import QUICK_ENV, TESTING_ENV, LocalServer, serve_command


def test_it_runs_botsvc_serve_of_this_package_with_this_interpreter():
    assert serve_command() == [sys.executable, "-m", "botsvc.cli", "serve"]


def test_a_bot_s_tests_get_the_testing_tools_and_local_webhooks(tmp_path):
    server = LocalServer(tmp_path / "data", {"BOTSVC_RATE_API_PER_SEC": "0"})
    assert TESTING_ENV.items() <= server.env.items()
    assert server.env["BOTSVC_RATE_API_PER_SEC"] == "0"
    assert server.env["BOTSVC_BIND"] == f"127.0.0.1:{server.port}"
    assert server.env["BOTSVC_BASE_URL"] == server.base_url
    assert server.env["BOTSVC_DATA_DIR"] == str(tmp_path / "data")
    assert server.env["BOTSVC_ADMIN_TOKEN"] == server.admin_token
    assert server.log_path == tmp_path / "data-server.log"   # beside, not in, the data dir
    assert server.db_path == str(tmp_path / "data" / "botsvc.sqlite3")


def test_the_suite_s_servers_are_as_in_production_unless_asked(tmp_path):
    server = suite_server(tmp_path / "data", BOTSVC_TEST_TOOLS=1, BOTSVC_WORKERS=1)
    assert NO_RATE_LIMITS_ENV.items() <= server.env.items()
    assert (server.env["BOTSVC_TEST_TOOLS"], server.env["BOTSVC_WORKERS"]) == ("1", "1")
    assert server.env["BOTSVC_WEBHOOK_ALLOW_PRIVATE"] == "0"
    assert server.env["BOTSVC_ACCESS_LOG"] == "0"
    again = suite_server(tmp_path / "data", port=server.port)
    assert again.base_url == server.base_url   # a restart's own port


def test_a_test_without_the_server_marker_cannot_start_one(tmp_path):
    with pytest.raises(RuntimeError, match=r"starts a real server: mark it @pytest.mark.server"):
        LocalServer(tmp_path / "data").start()
    assert not (tmp_path / "data").exists()


@pytest.mark.server
def test_a_quick_stop_ends_master_and_worker_without_a_kill(tmp_path):
    """The plugin's stop: the quick server, used, then stopped quickly, in a
    few rounds (a worker given two quit signals could deadlock until the
    SIGKILL of the 10 s timeout: the master alone is signalled)."""
    for round_ in range(3):
        server = LocalServer(tmp_path / f"data{round_}", QUICK_ENV).start()
        server.operator("advanceClock", seconds=5)
        started = time.monotonic()
        server.stop(quick=True)
        assert time.monotonic() - started < 5
        log = server.log_path.read_text()
        assert "Worker exiting" in log
        assert log.rstrip().endswith("Shutting down: Master")
