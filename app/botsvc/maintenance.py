"""The clean-up jobs' actions (listed in app/botsvc/jobs/schedule.py): expired
updates, idempotency keys, webhook delivery and call log records (24 hours
of service time) with a WAL checkpoint, chat history past its retention, upload
leftovers, and what a killed process left behind. The periodic ones run once
per interval across all processes (the runner claims their turn:
``Job.once_per_interval``); the work itself is in the domain modules."""
from __future__ import annotations

import logging

from flask import current_app

from botsvc import clock, disk, idempotency
from botsvc.db import checkpoint, checkpoint_passive, transaction
from botsvc.domain import call_records, files, messages, replays, updates, webhook_deliveries
from botsvc.jobs import action
from botsvc.replication import app_checkpoints

log = logging.getLogger(__name__)
DAY_SECONDS = 86400


@action("delete_expired_records")
def delete_expired_records(conn, settings) -> None:
    with transaction(conn):
        dropped = updates.delete_expired(conn)
        replays.delete_expired(conn)   # the replay marks, kept as long as updates
        keys = idempotency.delete_expired(conn)
        keys += idempotency.release_abandoned_claims(conn)
        records = webhook_deliveries.delete_expired(conn, clock.time())
        calls = call_records.delete_expired(conn, clock.time())
    if dropped or keys or records or calls:
        log.info("clean-up removed %d expired updates, %d idempotency keys, %d webhook"
                 " delivery records and %d call log records", dropped, keys, records, calls)
    if app_checkpoints(settings):
        checkpoint(conn)


@action("checkpoint_wal")
def checkpoint_wal(conn, settings) -> None:
    """Commits leave the WAL to this job (app/botsvc/db/connection.py:
    wal_autocheckpoint off), or to Litestream while it replicates
    (app/botsvc/replication.py)."""
    if app_checkpoints(settings):
        checkpoint_passive(conn)


@action("delete_old_history")
def delete_old_history(conn, settings) -> None:
    """BOTSVC_HISTORY_RETENTION_DAYS: messages (and clicks) older than that go,
    in batches, each its own short transaction. 0 keeps everything (the
    job is not wanted then: see the list)."""
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


@action("sweep_upload_leftovers")
def sweep_upload_leftovers(conn, settings) -> None:
    """Quarantine and work files whose upload is no longer under way."""
    files.sweep_leftovers(conn, settings.data_dir, current_app.config["MEDIA"].work_dir,
                          current_app.config["QUARANTINE_DIR"])


@action("keep_disk_reserve")
def keep_disk_reserve(conn, settings) -> None:
    """The reserve that lets a start on a full disk open the database comes
    back once there is room (app/botsvc/disk.py). A stat; no write unless missing."""
    disk.keep_reserve(settings.data_dir, settings.min_free_bytes)


@action("release_unreleased_claims")
def release_unreleased_claims(conn, settings) -> None:
    """The Idempotency-Key claims this process could not release while the
    disk was full, released once it takes the write (no query otherwise)."""
    if idempotency.release_unreleased(conn):
        log.info("released Idempotency-Key claims held while the disk was full")


@action("recover_from_dead_processes")
def recover_from_dead_processes(conn, settings) -> None:
    """At the start of a process: release the Idempotency-Key claims of
    processes that died, and remove their quarantine and work files, so a
    crash leaves no key stuck and nothing on disk."""
    with transaction(conn):
        released = idempotency.release_abandoned_claims(conn)
    files.sweep_leftovers(conn, settings.data_dir, current_app.config["MEDIA"].work_dir,
                          current_app.config["QUARANTINE_DIR"])
    if released:
        log.info("released %d Idempotency-Key claims of processes that died", released)
