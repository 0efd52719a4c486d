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
from app.jobs.runner import claim_periodic, release_claim
from app.jobs.scheduler import wake
from app.webhooks.delivery import deliverer_for

# A broadcast pass returns to the scheduler after this long (its record of the
# run is written), and runs again at once when work is left.
BROADCAST_RUN_BUDGET_SECONDS = 0.4
MIN_PAUSE_SECONDS = 0.001
MAX_PAUSE_SECONDS = 0.002       # a writer queued on the lock is woken at its release
# One process at a time delivers broadcasts: a request waiting for the write
# lock then competes with one deliverer that pauses after each batch, not with
# two that hand the lock to each other (p99 of the bot's own sendMessage
# during a 100,000-member broadcast: see docs/broadcasts.md). The turn is
# given back at the end of a pass; one held by a process that died expires.
BROADCAST_TURN = broadcast_delivery.JOB + ":turn"
BROADCAST_TURN_SECONDS = 5.0


def deliver_due_broadcasts(conn: sqlite3.Connection, settings: Settings) -> None:
    """Round-robin over unfinished broadcasts, one batch each per round, until
    nothing moves (all done, or the send rates are used up) or the budget
    ends, in this process's turn."""
    if not broadcasts.unfinished_broadcasts(conn):
        return
    if not claim_periodic(conn, BROADCAST_TURN, BROADCAST_TURN_SECONDS):
        return   # another process delivers; it gives the turn back within its budget
    try:
        if _deliver_for_a_while(conn, settings):
            wake(broadcast_delivery.JOB)   # work is left: the next pass follows at once
    finally:
        release_claim(conn, BROADCAST_TURN)


def _deliver_for_a_while(conn: sqlite3.Connection, settings: Settings) -> bool:
    """Deliver batches until nothing moves or the budget ends; True when
    the budget ended first."""
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
            return False
    return True


def deliver_due_webhooks(conn: sqlite3.Connection, settings: Settings) -> None:
    """Claim the due queue heads (one per bot, as many as this process has
    free slots) and hand them to this process's delivery pool."""
    deliverer_for(settings).run_pass(conn)
