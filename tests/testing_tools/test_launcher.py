"""The one launcher of real servers (app/botsvc/testkit/server.py) without starting
one: what it runs, with which environment, where its log goes, and the
suite's guard that refuses a start from a test without the server marker
(so the fast lane never starts a server)."""
from __future__ import annotations

import contextlib
import os
import signal
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


def _children(pid: int) -> list[int]:
    with open(f"/proc/{pid}/task/{pid}/children") as fh:
        return [int(child) for child in fh.read().split()]


@pytest.mark.server
def test_a_worker_given_two_quit_signals_exits_by_itself(tmp_path):
    """BotsvcWorker.handle_quit: the quick stop's worker exits on its quit
    signal, and a second one (SIGINT to the whole group, then the master's
    SIGQUIT) is harmless: it once could deadlock gthread's handle_quit on its
    thread pool's shutdown lock. Here the master is not stopping, so it reaps
    the worker (a clean exit is not logged, a signal's death is) and boots
    another, which answers."""
    server = LocalServer(tmp_path / "data", QUICK_ENV).start()
    try:
        server.operator("advanceClock", seconds=5)
        [worker] = _children(server.process.pid)
        os.kill(worker, signal.SIGINT)
        with contextlib.suppress(ProcessLookupError):
            os.kill(worker, signal.SIGQUIT)
        deadline = time.monotonic() + 60   # a hang guard, not a measure
        while worker in _children(server.process.pid) or not _children(server.process.pid):
            assert time.monotonic() < deadline, "the worker did not exit"
            time.sleep(0.01)
        server.wait_until_answering()
        assert server.operator("getClock")["offset"] == 5
        log = server.log_path.read_text()
        assert f"Worker (pid:{worker})" not in log   # neither killed nor a failing exit
        assert log.count("Booting worker with pid") == 2
    finally:
        server.stop(quick=True)


@pytest.mark.server
def test_a_quick_stop_leaves_no_process_of_the_server(tmp_path):
    """The plugin's stop, in a few rounds: the quick server, used, then
    stopped quickly; nothing of its process group is left."""
    for round_ in range(3):
        server = LocalServer(tmp_path / f"data{round_}", QUICK_ENV).start()
        server.operator("advanceClock", seconds=5)
        group = server.process.pid
        server.stop(quick=True)
        assert server.process is None
        with pytest.raises(ProcessLookupError):
            os.killpg(group, 0)
        assert "Handling signal: int" in server.log_path.read_text()
