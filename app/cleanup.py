"""Clean-up: expired updates and idempotency keys, and a WAL checkpoint."""
from __future__ import annotations

import logging

from app import idempotency
from app.db import checkpoint, transaction
from app.domain import updates
from app.worker import claim_periodic, periodic

log = logging.getLogger(__name__)
CLEANUP_INTERVAL_SECONDS = 60.0


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
