"""The one home of background work (app/botsvc/jobs): the list is the only place a
job comes from, each pass is recorded in job_runs (a failure by its class
only), a failing job does not stop the scheduler, and job_health tells a
failing or stuck job from a healthy one."""
from __future__ import annotations

import re
import subprocess
import sys
import threading
import time

import pytest

from botsvc import clock
from botsvc.devkit.paths import REPO
from botsvc.jobs import Job, actions, records, run_job, scheduler
from botsvc.jobs.health import job_health, stuck_after
from botsvc.jobs.schedule import JOBS

APP_DIR = REPO / "app" / "botsvc"


class SecretLeak(RuntimeError):
    pass


def wait_until(condition, timeout=5.0):
    deadline = time.monotonic() + timeout
    while not condition():
        assert time.monotonic() < deadline, "timed out"
        time.sleep(0.01)


def record(db, name):
    return db.execute("SELECT * FROM job_runs WHERE name = ?", (name,)).fetchone()


def test_the_list_is_what_the_scheduler_runs(app):
    started = scheduler.Worker(app)
    try:
        started.start()
        scheduled = {job.id: job.trigger.interval.total_seconds()
                     for job in started.scheduler.get_jobs()}
    finally:
        started.shutdown()
    assert scheduled == {job.name: job.seconds for job in JOBS if job.seconds is not None}
    names = [job.name for job in JOBS]
    assert len(set(names)) == len(names)
    assert {"deliver_due_broadcasts", "deliver_due_webhooks", "delete_expired_records",
            "sweep_upload_leftovers", "delete_old_history",
            "recover_from_dead_processes"} <= set(names)


def test_every_listed_job_has_one_action_where_its_work_lives_and_nothing_else_schedules(app):
    owners = {job.name: actions.action_for(job.name).__module__ for job in JOBS}
    assert owners == {name: ("botsvc.api.broadcast_delivery" if name == "deliver_due_broadcasts"
                             else "botsvc.webhooks.delivery" if name == "deliver_due_webhooks"
                             else "botsvc.maintenance") for name in owners}
    outside = [path for path in APP_DIR.rglob("*.py")
               if re.search(r"^\s*(from|import) apscheduler", path.read_text(), re.MULTILINE)
               and path.parent.name != "jobs"]
    assert outside == []


def test_the_app_factory_alone_registers_every_action():
    """What a worker imports registers every job's work (the suite's own
    imports could hide a module that only a test imports)."""
    code = ("import botsvc.factory; from botsvc.jobs import actions; "
            "from botsvc.jobs.schedule import JOBS; "
            "print(actions.missing([job.name for job in JOBS]))")
    done = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True,
                          cwd=REPO, timeout=120)
    assert (done.returncode, done.stdout.strip()) == (0, "[]"), done.stderr[-2000:]


def test_the_start_up_job_runs_and_is_recorded_when_the_app_starts(app, db):
    row = record(db, "recover_from_dead_processes")
    assert row["last_success_at"] is not None and row["last_failure_at"] is None


def test_a_pass_is_recorded_and_a_failure_by_its_class_only(app, db, clock):
    calls = []

    def flaky(conn, settings):
        calls.append(1)
        if len(calls) == 1:
            raise SecretLeak("token 1:abcdef at /srv/private/path")

    job = Job("flaky", 60.0, run=flaky)
    with pytest.raises(SecretLeak):
        run_job(app, job)
    failed = dict(record(db, "flaky"))
    assert failed["last_failure_at"] == clock.now and failed["last_error"] == "SecretLeak"
    assert failed["consecutive_failures"] == 1 and failed["last_success_at"] is None
    assert not any("abcdef" in str(value) or "/srv" in str(value) for value in failed.values())
    clock.advance(5)
    run_job(app, job)   # after a failure the next pass is recorded at once
    recovered = record(db, "flaky")
    assert recovered["last_success_at"] == clock.now and recovered["consecutive_failures"] == 0
    assert recovered["last_error"] == "SecretLeak"     # the last failure stays on record


def test_the_scheduler_goes_on_after_a_failing_pass(app, db):
    runs = {"failing": 0, "steady": 0}
    lock = threading.Lock()

    def failing(conn, settings):
        with lock:
            runs["failing"] += 1
        raise ValueError("broken")

    def steady(conn, settings):
        with lock:
            runs["steady"] += 1

    started = scheduler.Worker(app, [Job("failing", 60.0, run=failing), Job("steady", 60.0, run=steady)])
    started.start()
    try:
        wait_until(lambda: runs["failing"] == 1 and runs["steady"] == 1)
        wait_until(lambda: (record(db, "failing") or {"consecutive_failures": 0})
                   ["consecutive_failures"] == 1)
        started.wake("failing")
        started.wake("steady")
        wait_until(lambda: runs["failing"] == 2 and runs["steady"] == 2)
        wait_until(lambda: record(db, "failing")["consecutive_failures"] == 2)
    finally:
        started.shutdown()
    assert record(db, "failing")["last_error"] == "ValueError"
    assert record(db, "steady")["last_failure_at"] is None


def test_fast_jobs_record_a_success_at_most_every_few_seconds(app, db, clock):
    job = Job("fast", 0.5, run=lambda conn, settings: None)
    run_job(app, job)
    first = record(db, "fast")["last_success_at"]
    clock.advance(1)
    run_job(app, job)
    assert record(db, "fast")["last_success_at"] == first   # within RECORD_EVERY_SECONDS


def test_job_health_tells_healthy_failing_and_stuck_jobs_apart(app, db):
    now = clock.machine_time()
    webhooks, history = "deliver_due_webhooks", "delete_old_history"
    db.execute("DELETE FROM job_runs")
    db.execute("INSERT INTO job_runs (name, first_seen_at, last_started_at, last_success_at)"
               " VALUES (?, ?, ?, ?)", (webhooks, now - 1000, now - 2, now - 2))
    db.execute("INSERT INTO job_runs (name, first_seen_at, last_success_at, last_failure_at,"
               " last_error, consecutive_failures) VALUES (?, ?, ?, ?, ?, ?)",
               ("delete_expired_records", now - 1000, now - 500, now - 30,
                "OperationalError", 4))
    db.execute("INSERT INTO job_runs (name, first_seen_at) VALUES (?, ?)",
               (history, now - stuck_after(3600) - 1))
    health = {entry["name"]: entry for entry in job_health(db, now)}
    assert list(health) == [job.name for job in JOBS]
    assert health[webhooks]["failing"] is False and health[webhooks]["stuck"] is False
    assert health[webhooks]["success_age_seconds"] == pytest.approx(2)
    expired = health["delete_expired_records"]
    assert expired["failing"] is True and expired["last_error"] == "OperationalError"
    assert expired["stuck"] is True    # 500 s without a success, interval 60 s
    assert health[history]["stuck"] is True and health[history]["success_age_seconds"] is None
    # Never listed by a scheduler yet, and the start-up job: never stuck.
    assert health["sweep_upload_leftovers"]["stuck"] is False
    assert health["recover_from_dead_processes"]["stuck"] is False


def test_a_record_that_cannot_be_written_does_not_stop_the_job(app, db, monkeypatch):
    ran = []
    db.execute("DROP TABLE job_runs")   # every record write now fails
    monkeypatch.setattr(records, "RECORD_EVERY_SECONDS", 0.0)
    run_job(app, Job("unrecorded", 60.0, run=lambda conn, settings: ran.append(1)))
    assert ran == [1]


def test_an_unwanted_job_claims_no_turn(app, db):
    """History retention off: its hourly tick claims nothing, so turning the
    setting on (a restart) makes the next tick run it, not one an hour later."""
    run_job(app, "delete_old_history")
    assert db.execute("SELECT count(*) FROM periodic_jobs WHERE name = 'delete_old_history'"
                      ).fetchone()[0] == 0
    run_job(app, "delete_expired_records")
    assert db.execute("SELECT count(*) FROM periodic_jobs WHERE name = 'delete_expired_records'"
                      ).fetchone()[0] == 1
