"""Clean-up: expired updates and idempotency keys, a WAL checkpoint, and chat
history past its retention."""
from __future__ import annotations

import logging

from app import idempotency
from app.db import checkpoint, now, transaction
from app.domain import messages, updates
from app.worker import claim_periodic, periodic

log = logging.getLogger(__name__)
CLEANUP_INTERVAL_SECONDS = 60.0
HISTORY_JOB = "delete_old_history"
HISTORY_INTERVAL_SECONDS = 3600.0
DAY_SECONDS = 86400


@periodic("delete_expired_records", seconds=CLEANUP_INTERVAL_SECONDS)
def delete_expired_records(conn, settings) -> None:
    if not claim_periodic(conn, "delete_expired_records", CLEANUP_INTERVAL_SECONDS - 1):
        return
    with transaction(conn):
        dropped = updates.delete_expired(conn)
        keys = idempotency.delete_expired(conn)
    if dropped or keys:
        log.info("clean-up removed %d expired updates and %d idempotency keys", dropped, keys)
    checkpoint(conn)


@periodic(HISTORY_JOB, seconds=HISTORY_INTERVAL_SECONDS)
def delete_old_history(conn, settings) -> None:
    """BOTSVC_HISTORY_RETENTION_DAYS: messages (and clicks) older than that go,
    in batches, each its own short transaction. 0 keeps everything."""
    if not settings.history_retention_days:
        return
    if not claim_periodic(conn, HISTORY_JOB, HISTORY_INTERVAL_SECONDS - 1):
        return
    cutoff = now() - settings.history_retention_days * DAY_SECONDS
    total = 0
    while True:
        with transaction(conn):
            removed = messages.remove_history_before(conn, cutoff)
        total += removed
        if not removed:
            break
    if total:
        log.info("history retention removed %d messages and callback queries", total)
