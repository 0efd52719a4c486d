"""Background work. APScheduler only ticks; the database is the queue.

Every gunicorn worker runs its own scheduler thread with every job, so a job
must be safe to run in several processes at once: each one claims its rows
atomically in SQLite (``UPDATE ... RETURNING`` inside ``BEGIN IMMEDIATE``,
with a lease that a crashed claimer lets expire). Jobs that should run once per
interval across all processes use ``claim_periodic``.
"""
from __future__ import annotations

import logging
import threading
import time
from collections.abc import Callable
from dataclasses import dataclass
from datetime import UTC, datetime

from apscheduler.executors.pool import ThreadPoolExecutor
from apscheduler.schedulers.background import BackgroundScheduler

from app import clock, disk
from app.db import thread_connection, transaction

log = logging.getLogger(__name__)
DISK_FULL_LOG_INTERVAL_SECONDS = 60.0


@dataclass(frozen=True)
class Job:
    name: str
    run: Callable  # run(conn, settings) -> None
    seconds: float


JOBS: dict[str, Job] = {}


def periodic(name: str, seconds: float):
    """Register ``fn(conn, settings)`` to run every ``seconds`` in every process."""
    def register(fn):
        JOBS[name] = Job(name, fn, seconds)
        return fn
    return register


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


def make_periodic_jobs_due(conn) -> None:
    """In the caller's transaction: the next tick of every periodic job runs
    (the service clock moved, so expired records may be waiting)."""
    conn.execute("UPDATE periodic_jobs SET next_run_at = 0")


def run_job(app, name: str) -> None:
    """One pass of a job, with its own connection and an app context."""
    job = JOBS[name]
    settings = app.config["SETTINGS"]
    with app.app_context():
        conn = thread_connection(settings.db_path)
        try:
            clock.refresh(conn)  # each pass sees the clock as advanceClock left it
            job.run(conn, settings)
        finally:
            if conn.in_transaction:
                conn.execute("ROLLBACK")


class Worker:
    """The scheduler of one process. ``wake(name)`` runs a job now, and once
    more after the current pass if one is under way, so a wake-up is never lost."""

    def __init__(self, app):
        self.app = app
        self.scheduler = BackgroundScheduler(
            executors={"default": ThreadPoolExecutor(max(4, len(JOBS) + 1))},
            # Two instances: one pass, and a tick or wake-up that arrives while
            # it finishes; _tick lets only one of them run a pass at a time.
            job_defaults={"coalesce": True, "max_instances": 2, "misfire_grace_time": 30},
            timezone=UTC)
        self._again = {name: threading.Event() for name in JOBS}
        # Jobs with a pass under way in this process: a tick or wake-up that
        # finds one sets its ``again`` flag instead of running a second pass
        # (and wake() does not bother APScheduler, which would log a skip).
        self._running: set[str] = set()
        self._lock = threading.Lock()
        self._disk_full_logged_at = -DISK_FULL_LOG_INTERVAL_SECONDS

    def start(self) -> None:
        # APScheduler logs two INFO lines per run; with a tick a second and a
        # wake-up per webhook update they would drown the service's own log.
        logging.getLogger("apscheduler.executors.default").setLevel(logging.WARNING)
        for job in JOBS.values():
            self.scheduler.add_job(self._tick, "interval", seconds=job.seconds, id=job.name,
                                   args=[job.name], next_run_time=datetime.now(UTC))
        self.scheduler.start()
        log.info("background worker started with jobs: %s", ", ".join(sorted(JOBS)))

    def shutdown(self) -> None:
        self.scheduler.shutdown(wait=False)

    def wake(self, name: str) -> None:
        if name not in self._again:
            return
        with self._lock:
            self._again[name].set()
            if name in self._running:
                return
        try:
            self.scheduler.modify_job(name, next_run_time=datetime.now(UTC))
        except Exception:  # the scheduler is shutting down
            log.debug("wake of %s ignored", name)

    def _tick(self, name: str) -> None:
        again = self._again[name]
        with self._lock:
            if name in self._running:
                again.set()
                return
            self._running.add(name)
        try:
            while True:
                again.clear()
                run_job(self.app, name)
                with self._lock:
                    if not again.is_set():
                        # Under the lock: a wake-up either set the flag before
                        # this check or finds the job no longer running.
                        self._running.discard(name)
                        return
        except Exception as exc:
            if disk.is_disk_full(exc, self.app.config["SETTINGS"].data_dir):
                self._disk_full(name)
            else:
                log.exception("background job %s failed; it runs again at its next tick", name)
        finally:
            with self._lock:
                self._running.discard(name)


    def _disk_full(self, name: str) -> None:
        """One line a minute while the disk is full, not a traceback a tick:
        the job's work waits in the database and resumes with the space."""
        now = time.monotonic()
        if now - self._disk_full_logged_at >= DISK_FULL_LOG_INTERVAL_SECONDS:
            self._disk_full_logged_at = now
            log.warning("background job %s waits: the disk is full", name)


_worker: Worker | None = None


def start_worker(app) -> Worker:
    global _worker
    _worker = Worker(app)
    _worker.start()
    return _worker


def wake(name: str) -> None:
    """Ask this process's scheduler to run ``name`` now (no-op without one)."""
    if _worker is not None:
        _worker.wake(name)


def wake_all() -> None:
    """Run every job now in this process (after the service clock moved)."""
    for name in JOBS:
        wake(name)
