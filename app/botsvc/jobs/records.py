"""The record of each job's last start, success and failure (``job_runs``).

Times are the machine's clock, like the jobs' intervals: ``advanceClock``
must not make a healthy job look stuck. A failure keeps only the exception's
class name (``OperationalError``), never its message, which may hold a path
or a value.

Recording costs a write transaction, and the delivery jobs tick twice a
second in every process, so a process records a job's start and success at
most once per ``RECORD_EVERY_SECONDS`` (and at once after a failure); a
failure is always recorded. Recording is best effort: a database that cannot
be written (a full disk) must not stop the job or the scheduler.
"""
from __future__ import annotations

import logging
import sqlite3
import threading
import time

from botsvc import clock
from botsvc.db import transaction
from botsvc.errors import ApiError

log = logging.getLogger(__name__)

RECORD_EVERY_SECONDS = 10.0
ERROR_CLASS_MAX_CHARS = 64

# (database, job) -> time.monotonic() of this process's last recorded start;
# absent after a failure, so the next pass records its start and success.
_last_recorded: dict[tuple[str, str], float] = {}
_lock = threading.Lock()


def _write(conn, sql: str, params: tuple) -> bool:
    try:
        with transaction(conn):
            conn.execute(sql, params)
        return True
    except (sqlite3.Error, ApiError) as error:   # ApiError: STORAGE_FULL
        log.debug("job record not written: %s", error)
        return False


def register(conn, names) -> None:
    """A row for each scheduled job, so one that never succeeds shows as stuck."""
    now = clock.machine_time()
    try:
        with transaction(conn):
            conn.executemany("INSERT INTO job_runs (name, first_seen_at) VALUES (?, ?)"
                             " ON CONFLICT (name) DO NOTHING", [(name, now) for name in names])
    except (sqlite3.Error, ApiError) as error:   # ApiError: STORAGE_FULL
        log.warning("job records not registered: %s", error)


def started(conn, db_path: str, job) -> bool:
    """Record the start of a pass when it is due; True when recorded."""
    key = (db_path, job.name)
    with _lock:
        last = _last_recorded.get(key)
        if last is not None and time.monotonic() - last < RECORD_EVERY_SECONDS:
            return False
        _last_recorded[key] = time.monotonic()
    now = clock.machine_time()
    return _write(conn, "INSERT INTO job_runs (name, first_seen_at, last_started_at)"
                        " VALUES (?, ?, ?) ON CONFLICT (name) DO UPDATE"
                        " SET last_started_at = excluded.last_started_at",
                  (job.name, now, now))


def succeeded(conn, job, recorded_start: bool) -> None:
    if recorded_start:
        _write(conn, "UPDATE job_runs SET last_success_at = ?, consecutive_failures = 0"
                     " WHERE name = ?", (clock.machine_time(), job.name))


def failed(conn, db_path: str, job, failure: BaseException) -> None:
    with _lock:
        _last_recorded.pop((db_path, job.name), None)
    now = clock.machine_time()
    error_class = type(failure).__name__[:ERROR_CLASS_MAX_CHARS]
    _write(conn, "INSERT INTO job_runs (name, first_seen_at, last_failure_at, last_error,"
                 " consecutive_failures) VALUES (?, ?, ?, ?, 1) ON CONFLICT (name) DO UPDATE"
                 " SET last_failure_at = excluded.last_failure_at,"
                 " last_error = excluded.last_error,"
                 " consecutive_failures = job_runs.consecutive_failures + 1",
           (job.name, now, now, error_class))
