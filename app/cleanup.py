"""Clean-up: expired updates, idempotency keys and webhook delivery records
(24 hours of service time), a WAL checkpoint, chat history past its
retention, and what a killed process left behind."""
from __future__ import annotations

import logging
import sqlite3

from app import clock, disk, idempotency
from app.db import checkpoint, connect, transaction
from app.domain import files, messages, updates, webhook_deliveries
from app.errors import ApiError
from app.worker import claim_periodic, periodic

log = logging.getLogger(__name__)
CLEANUP_INTERVAL_SECONDS = 60.0
HISTORY_JOB = "delete_old_history"
HISTORY_INTERVAL_SECONDS = 3600.0
DAY_SECONDS = 86400
RESERVE_INTERVAL_SECONDS = 30.0
UNRELEASED_INTERVAL_SECONDS = 2.0


@periodic("delete_expired_records", seconds=CLEANUP_INTERVAL_SECONDS)
def delete_expired_records(conn, settings) -> None:
    if not claim_periodic(conn, "delete_expired_records", CLEANUP_INTERVAL_SECONDS - 1):
        return
    with transaction(conn):
        dropped = updates.delete_expired(conn)
        keys = idempotency.delete_expired(conn)
        keys += idempotency.release_abandoned_claims(conn)
        records = webhook_deliveries.delete_expired(conn, clock.time())
    if dropped or keys or records:
        log.info("clean-up removed %d expired updates, %d idempotency keys and %d webhook"
                 " delivery records", dropped, keys, records)
    checkpoint(conn)


@periodic(HISTORY_JOB, seconds=HISTORY_INTERVAL_SECONDS)
def delete_old_history(conn, settings) -> None:
    """BOTSVC_HISTORY_RETENTION_DAYS: messages (and clicks) older than that go,
    in batches, each its own short transaction. 0 keeps everything."""
    if not settings.history_retention_days:
        return
    if not claim_periodic(conn, HISTORY_JOB, HISTORY_INTERVAL_SECONDS - 1):
        return
    cutoff = clock.now() - settings.history_retention_days * DAY_SECONDS
    total = 0
    while True:
        with transaction(conn):
            removed = messages.remove_history_before(conn, cutoff)
        total += removed
        if not removed:
            break
    if total:
        log.info("history retention removed %d messages and callback queries", total)


@periodic("release_unreleased_claims", seconds=UNRELEASED_INTERVAL_SECONDS)
def release_unreleased_claims(conn, settings) -> None:
    """Every process: the Idempotency-Key claims it could not release when
    the disk was full are released once it takes the write (nothing to do,
    and no query, otherwise)."""
    if idempotency.release_unreleased(conn):
        log.info("released Idempotency-Key claims held while the disk was full")


@periodic("keep_disk_reserve", seconds=RESERVE_INTERVAL_SECONDS)
def keep_disk_reserve(conn, settings) -> None:
    """Every process: the reserve that lets a start on a full disk open the
    database comes back once there is room (app/disk.py). A stat, no write
    unless it is missing."""
    disk.keep_reserve(settings.data_dir, settings.min_free_bytes)


def recover_from_dead_processes(settings, work_dir: str, quarantine_dir: str) -> None:
    """At the start of a process: release the Idempotency-Key claims of
    processes that died, and remove their quarantine and work files, so a
    crash leaves no key stuck and nothing on disk. Best effort: a database
    that cannot be written now (a full disk) is left to the periodic jobs
    and to the next duplicate request."""
    conn = connect(settings.db_path)
    try:
        with transaction(conn):
            released = idempotency.release_abandoned_claims(conn)
        files.sweep_leftovers(conn, settings.data_dir, work_dir, quarantine_dir)
        if released:
            log.info("released %d Idempotency-Key claims of processes that died", released)
    except (sqlite3.Error, OSError, ApiError) as exc:
        log.warning("start-up clean-up of dead processes' work skipped: %s", exc)
    finally:
        conn.close()
