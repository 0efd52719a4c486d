"""Worker.wake(): a wake-up during a pass is never lost and never starts a
second pass beside it; a wake-up while idle runs the job at once."""
from __future__ import annotations

import threading
import time

import pytest

from botsvc.jobs import Job, scheduler


@pytest.fixture
def probe(app, monkeypatch):
    """A job with a one-minute tick, so every run after the first is a wake-up.
    Its first run blocks until the test sets ``release``."""
    state = {"runs": 0, "running": 0, "overlaps": 0}
    release = threading.Event()
    lock = threading.Lock()

    def run(conn, settings):
        with lock:
            state["runs"] += 1
            state["running"] += 1
            state["overlaps"] += state["running"] > 1
            first = state["runs"] == 1
        if first:
            release.wait(10)
        with lock:
            state["running"] -= 1

    started = scheduler.Worker(app, [Job("probe", 60.0, run=run)])
    started.start()
    yield started, state, release
    release.set()
    started.shutdown()


def wait_until(condition, timeout=5.0):
    deadline = time.monotonic() + timeout
    while not condition():
        assert time.monotonic() < deadline, "timed out"
        time.sleep(0.01)


def test_wakes_during_a_pass_run_it_once_more_and_never_beside_it(probe, caplog):
    started, state, release = probe
    wait_until(lambda: state["running"] == 1)          # the first pass, blocked
    for _ in range(5):
        started.wake("probe")
    time.sleep(0.2)
    assert state["runs"] == 1
    release.set()
    wait_until(lambda: state["runs"] == 2 and state["running"] == 0)
    time.sleep(0.2)
    assert state["runs"] == 2 and state["overlaps"] == 0
    assert "skipped" not in caplog.text


def test_a_wake_while_idle_runs_the_job_at_once(probe):
    started, state, release = probe
    release.set()
    wait_until(lambda: state["runs"] == 1 and state["running"] == 0)
    time.sleep(0.05)
    started.wake("probe")
    wait_until(lambda: state["runs"] == 2, timeout=1.0)


def test_waking_an_unknown_job_does_nothing(probe):
    probe[0].wake("no_such_job")
