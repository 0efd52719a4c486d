"""Delivery passes: broadcasts and webhooks. Every process ticks them and
each pass claims its rows in SQLite, so any number of processes share the
work; the domain modules wake them when new work commits."""
from __future__ import annotations

import sqlite3
import time

from app import limits
from app.api import broadcast_delivery
from app.config import Settings
from app.domain import broadcasts
from app.webhooks.delivery import deliverer_for

# One broadcast pass ends before the next tick is due (0.5 s): a pass still
# running at a tick makes APScheduler skip it with a warning in the log.
# The next tick carries on.
BROADCAST_RUN_BUDGET_SECONDS = 0.4
MIN_PAUSE_SECONDS = 0.001
MAX_PAUSE_SECONDS = 0.002       # a writer queued on the lock is woken at its release


def deliver_due_broadcasts(conn: sqlite3.Connection, settings: Settings) -> None:
    """Round-robin over unfinished broadcasts, one batch each per pass, until
    nothing moves (all done, or the send rates are used up) or the budget ends."""
    send_limit = limits.configured_limits(settings).get(limits.SEND)
    deadline = time.monotonic() + BROADCAST_RUN_BUDGET_SECONDS
    while time.monotonic() < deadline:
        progressed = False
        for broadcast in broadcasts.unfinished_broadcasts(conn):
            started = time.monotonic()
            if broadcast_delivery.deliver_batch(conn, settings, broadcast, send_limit):
                progressed = True
                # Leave the write lock free at least as long as we held it.
                time.sleep(min(MAX_PAUSE_SECONDS,
                               max(MIN_PAUSE_SECONDS, time.monotonic() - started)))
        if not progressed:
            return


def deliver_due_webhooks(conn: sqlite3.Connection, settings: Settings) -> None:
    """Claim the due queue heads (one per bot, as many as this process has
    free slots) and hand them to this process's delivery pool."""
    deliverer_for(settings).run_pass(conn)
