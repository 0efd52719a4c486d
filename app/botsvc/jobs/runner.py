"""One pass of a job: its own connection, an app context, the service clock as
``advanceClock`` left it, and a record of how it went (``job_runs``)."""
from __future__ import annotations

import logging

from botsvc import clock
from botsvc.db import thread_connection, transaction
from botsvc.jobs import records
from botsvc.jobs.schedule import JOBS, Job

log = logging.getLogger(__name__)
# A claim lasts a second less than the tick, so the next tick always finds it due.
CLAIM_SLACK_SECONDS = 1.0


def claim_periodic(conn, name: str, interval: float, now: float | None = None) -> bool:
    """True for exactly one caller per interval, across all processes. The
    interval is the machine's time (how often to work); ``advanceClock`` makes
    every periodic job due at once (``make_periodic_jobs_due``)."""
    now = clock.machine_time() if now is None else now
    with transaction(conn):
        claimed = conn.execute(
            "INSERT INTO periodic_jobs (name, next_run_at) VALUES (?, ?)"
            " ON CONFLICT (name) DO UPDATE SET next_run_at = excluded.next_run_at"
            " WHERE periodic_jobs.next_run_at <= ? RETURNING name",
            (name, now + interval, now)).fetchone()
    return claimed is not None


def release_claim(conn, name: str) -> None:
    """Make ``name`` claimable again at once: its holder finished before the
    interval it claimed (``claim_periodic`` used as a turn, not a period)."""
    with transaction(conn):
        conn.execute("UPDATE periodic_jobs SET next_run_at = 0 WHERE name = ?", (name,))


def make_periodic_jobs_due(conn) -> None:
    """In the caller's transaction: the next tick of every periodic job runs
    (the service clock moved, so expired records may be waiting)."""
    conn.execute("UPDATE periodic_jobs SET next_run_at = 0")


def job_named(name: str) -> Job:
    for job in JOBS:
        if job.name == name:
            return job
    raise KeyError(name)


def run_job(app, job: Job | str) -> None:
    """One pass of ``job`` (or the listed job of that name), recorded. An
    exception is recorded (its class only) and raised again for the caller."""
    job = job_named(job) if isinstance(job, str) else job
    settings = app.config["SETTINGS"]
    with app.app_context():
        conn = thread_connection(settings.db_path)
        recorded_start = False
        try:
            clock.refresh(conn)  # each pass sees the clock as advanceClock left it
            recorded_start = records.started(conn, settings.db_path, job)
            if job.wanted is not None and not job.wanted(settings):
                pass
            elif not job.once_per_interval or claim_periodic(
                    conn, job.name, job.seconds - CLAIM_SLACK_SECONDS):
                job.action()(conn, settings)
        except Exception as failure:
            _rollback(conn)
            records.failed(conn, settings.db_path, job, failure)
            raise
        else:
            records.succeeded(conn, job, recorded_start)
        finally:
            _rollback(conn)


def run_start_jobs(app, jobs) -> None:
    """The jobs without an interval, once, at the start of a process. Best
    effort: a database that cannot be written now (a full disk) leaves their
    work to the periodic jobs."""
    for job in jobs:
        if job.seconds is None:
            try:
                run_job(app, job)
            except Exception as failure:   # recorded by run_job when it could be
                log.warning("start-up job %s skipped: %s", job.name, failure)


def _rollback(conn) -> None:
    if conn.in_transaction:
        conn.execute("ROLLBACK")
