"""This process's scheduler: an APScheduler thread that only ticks the listed
jobs (``schedule.JOBS``), and ``wake`` to run one at once.

Every gunicorn worker runs one, with every job (the database is the queue,
each pass claims its rows atomically), so nothing here is shared
between processes.
"""
from __future__ import annotations

import contextlib
import logging
import threading
import time
from collections.abc import Sequence
from datetime import UTC, datetime

from apscheduler.executors.pool import ThreadPoolExecutor
from apscheduler.schedulers.background import BackgroundScheduler

from botsvc import disk
from botsvc.db import connect
from botsvc.jobs import actions, records
from botsvc.jobs.runner import run_job
from botsvc.jobs.schedule import JOBS, Job

log = logging.getLogger(__name__)
DISK_FULL_LOG_INTERVAL_SECONDS = 60.0


class Worker:
    """The scheduler of one process. ``wake(name)`` runs a job now, and once
    more after the current pass if one is under way, so a wake-up is never lost.
    A pass that fails is recorded and logged; the job runs again at its next tick."""

    def __init__(self, app, jobs: Sequence[Job] | None = None):
        jobs = JOBS if jobs is None else jobs
        missing = actions.missing(job.name for job in jobs if job.run is None)
        if missing:
            raise RuntimeError(f"no action registered for the jobs {', '.join(missing)}")
        self.app = app
        self.jobs = {job.name: job for job in jobs if job.seconds is not None}
        self._disk_full_logged_at = -DISK_FULL_LOG_INTERVAL_SECONDS
        self.scheduler = BackgroundScheduler(
            executors={"default": ThreadPoolExecutor(max(4, len(self.jobs) + 1))},
            # Two instances: one pass, and a tick or wake-up that arrives while
            # it finishes; _tick lets only one of them run a pass at a time.
            job_defaults={"coalesce": True, "max_instances": 2, "misfire_grace_time": 30},
            timezone=UTC)
        self._again = {name: threading.Event() for name in self.jobs}
        # Jobs with a pass under way in this process: a tick or wake-up that
        # finds one sets its ``again`` flag instead of running a second pass
        # (and wake() does not bother APScheduler, which would log a skip).
        self._running: set[str] = set()
        self._lock = threading.Lock()

    def start(self) -> None:
        db_path = self.app.config["SETTINGS"].db_path
        with contextlib.closing(connect(db_path)) as conn:
            records.register(conn, self.jobs)
        for job in self.jobs.values():
            self.scheduler.add_job(self._tick, "interval", seconds=job.seconds, id=job.name,
                                   args=[job.name], next_run_time=datetime.now(UTC))
        self.scheduler.start()
        log.info("background worker started with jobs: %s", ", ".join(sorted(self.jobs)))

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

    def wake_all(self) -> None:
        for name in self.jobs:
            self.wake(name)

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
                run_job(self.app, self.jobs[name])
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


def start_worker(app, jobs: Sequence[Job] | None = None) -> Worker:
    global _worker
    _worker = Worker(app, jobs)
    _worker.start()
    return _worker


def stop_worker() -> None:
    """Stop this process's scheduler (gunicorn's worker_exit), so that no tick
    is submitted to an executor that is already shut down."""
    if _worker is not None:
        _worker.shutdown()


def wake(name: str) -> None:
    """Ask this process's scheduler to run ``name`` now (no-op without one)."""
    if _worker is not None:
        _worker.wake(name)


def wake_after_commit(conn, name: str) -> None:
    """The one way work announces itself: once the transaction that queued it
    commits, run job ``name`` now in this process (the other processes find
    it at their next tick). Nothing happens if the transaction rolls back."""
    conn.after_commit(lambda: wake(name))


def wake_all() -> None:
    """Run every scheduled job now in this process (after the service clock moved)."""
    if _worker is not None:
        _worker.wake_all()
