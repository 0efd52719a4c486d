"""Clean-up: expired updates, idempotency keys and webhook delivery records
(24 hours of service time), and a WAL checkpoint."""
from __future__ import annotations

import logging

from app import clock, idempotency
from app.db import checkpoint, transaction
from app.domain import updates, webhook_deliveries
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
        records = webhook_deliveries.delete_expired(conn, clock.time())
    if dropped or keys or records:
        log.info("clean-up removed %d expired updates, %d idempotency keys and %d webhook"
                 " delivery records", dropped, keys, records)
    checkpoint(conn)
