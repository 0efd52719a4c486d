"""Broadcast delivery: the worker that sends each queued recipient through the
very method the broadcast names (its schema, its prepare step, its handler),
as if the bot had called it with the recipient's chat_id.

Why it cannot lose or duplicate a recipient: one ``BEGIN IMMEDIATE``
transaction reads a batch of queued recipients, inserts their messages and
marks them sent or failed, with the counters. A crash before COMMIT leaves
them all queued (delivered again later, once); after COMMIT, all recorded.
Any number of processes may run the job: the write lock serialises them and
each one only sees recipients still queued when it holds the lock.

Why it does not starve interactive requests: a batch is small (a few ms of
lock), and after each batch the worker pauses at least as long as the batch
held the lock, so a waiting request gets its turn.

The shared send rate (the contract's 20/s per bot, broadcasts included): deliveries
take tokens from the bot's SEND bucket, but only the tokens above a reserve
of a quarter of the burst (at least one, when the burst allows). The bot's own
sendMessage calls may use the reserve, so a large broadcast slows down to the
rate the bot leaves free, instead of making the bot's replies RATE_LIMITED.

How a recipient is sent (the method's own path, for one chat or many) is in
``broadcast_payload.py``, which createBroadcast uses to check the payload.
"""
from __future__ import annotations

import json
import logging
import sqlite3
import time
from collections.abc import Callable

from botsvc import limits, metrics
from botsvc.api.broadcast_payload import Sender, make_sender
from botsvc.auth import Bot
from botsvc.config import Settings
from botsvc.db import transaction
from botsvc.domain import broadcasts
from botsvc.domain.bots import find_bot
from botsvc.domain.chats import check_active
from botsvc.errors import ApiError, ErrorCode, RateLimited
from botsvc.jobs import DELIVER_BROADCASTS, action, claim_periodic, release_claim, wake

log = logging.getLogger(__name__)

BATCH_SIZE = 100                # recipients per transaction: a few ms of write lock
# A pass returns to the scheduler after this long (its run is recorded), and
# runs again at once when work is left.
RUN_BUDGET_SECONDS = 0.4
MIN_PAUSE_SECONDS = 0.001
MAX_PAUSE_SECONDS = 0.002       # a writer queued on the lock is woken at its release
# One process at a time delivers broadcasts: a request waiting for the write
# lock then competes with one deliverer that pauses after each batch, not
# with two that hand the lock to each other (docs/broadcasts.md). The turn is
# given back at the end of a pass; one held by a process that died expires.
TURN = DELIVER_BROADCASTS + ":turn"
TURN_SECONDS = 5.0

@action(DELIVER_BROADCASTS)
def deliver_due_broadcasts(conn: sqlite3.Connection, settings: Settings) -> None:
    """One pass of the job, in this process's turn: round-robin over
    unfinished broadcasts, one batch each, until nothing moves (all done, or
    the send rates are used up) or the budget ends."""
    if not broadcasts.unfinished_broadcasts(conn):
        return
    if not claim_periodic(conn, TURN, TURN_SECONDS):
        return   # another process delivers; it gives the turn back within its budget
    try:
        if _deliver_for_a_while(conn, settings):
            wake(DELIVER_BROADCASTS)   # work is left: the next pass follows at once
    finally:
        release_claim(conn, TURN)


def _deliver_for_a_while(conn: sqlite3.Connection, settings: Settings) -> bool:
    """Deliver batches until nothing moves or the budget ends; True when the
    budget ended first."""
    send_limit = limits.configured_limits(settings).get(limits.SEND)
    deadline = time.monotonic() + RUN_BUDGET_SECONDS
    while time.monotonic() < deadline:
        progressed = False
        for broadcast in broadcasts.unfinished_broadcasts(conn):
            started = time.monotonic()
            if deliver_batch(conn, settings, broadcast, send_limit):
                progressed = True
                # Leave the write lock free at least as long as we held it.
                time.sleep(min(MAX_PAUSE_SECONDS,
                               max(MIN_PAUSE_SECONDS, time.monotonic() - started)))
        if not progressed:
            return False
    return True


# -- the job ---------------------------------------------------------------------

def send_allowance(conn: sqlite3.Connection, bot_id: int, send_limit: limits.Limit | None) -> int:
    """How many recipients this batch may take from the bot's send rate."""
    if send_limit is None:
        return BATCH_SIZE
    reserve = min(send_limit.count - 1, max(1, send_limit.count // 4))
    return max(0, min(BATCH_SIZE, limits.headroom(conn, bot_id, send_limit) - reserve))


def deliver_one(conn: sqlite3.Connection, send: Callable[[str], dict],
                chat: sqlite3.Row) -> broadcasts.Outcome:
    try:
        with transaction(conn):  # a savepoint: a failed send leaves nothing behind
            check_active(chat)   # membership and blocking, as they are now
            message = send(chat["chat_id"])
        return broadcasts.Outcome(chat["position"], message_id=message["message_id"])
    except ApiError as error:
        if error.code == ErrorCode.STORAGE_FULL:
            raise  # the disk, not the recipient: give the whole batch back, retry later
        return broadcasts.Outcome(chat["position"], error_code=error.code.value)
    except sqlite3.Error:
        raise  # the database itself: give the whole batch back, retry later
    except Exception:
        # A bug in a send path must not make one recipient poison the queue.
        log.exception("broadcast delivery to %s failed", chat["chat_id"])
        return broadcasts.Outcome(chat["position"], error_code=ErrorCode.INTERNAL_ERROR.value)


def deliver_recipients(conn: sqlite3.Connection, sender: Sender,
                       recipients: list[sqlite3.Row]) -> list[broadcasts.Outcome]:
    """Each recipient's outcome, in their order. With ``sender.many``, the
    active ones (membership and blocking checked on their rows, read in this
    transaction) get their messages in one go; if that fails, each is
    delivered alone, so every recipient still gets its own outcome."""
    if sender.many is None:
        return [deliver_one(conn, sender.one, chat) for chat in recipients]
    outcomes: dict[int, broadcasts.Outcome] = {}
    active = []
    for chat in recipients:
        try:
            check_active(chat)
        except ApiError as error:
            outcomes[chat["position"]] = broadcasts.Outcome(chat["position"],
                                                            error_code=error.code.value)
        else:
            active.append(chat)
    if active:
        try:
            with transaction(conn):  # a savepoint: all of them or none
                messages = sender.many(active)
        except sqlite3.Error:
            raise  # the database itself: give the whole batch back, retry later
        except Exception as error:
            if isinstance(error, ApiError) and error.code == ErrorCode.STORAGE_FULL:
                raise
            messages = None
        if messages is None:
            for chat in active:
                outcomes[chat["position"]] = deliver_one(conn, sender.one, chat)
        else:
            for chat, message in zip(active, messages, strict=True):
                outcomes[chat["position"]] = broadcasts.Outcome(
                    chat["position"], message_id=message["message_id"])
    return [outcomes[chat["position"]] for chat in recipients]


def deliver_batch(conn: sqlite3.Connection, settings: Settings, broadcast: sqlite3.Row,
                  send_limit: limits.Limit | None) -> int:
    """Deliver up to BATCH_SIZE recipients of one broadcast in one transaction;
    returns how many reached a final state."""
    row = find_bot(conn, broadcast["bot_id"])
    if row is None:
        return 0  # removed by reset since the broadcast was listed
    bot = Bot.from_row(row)
    sender = make_sender(conn, settings, bot, broadcast["method"],
                         json.loads(broadcast["payload"]))
    with transaction(conn):
        if not broadcasts.is_unfinished(conn, broadcast["id"]):
            return 0  # cancelled or finished by another process meanwhile
        allowance = send_allowance(conn, bot.id, send_limit)
        if allowance == 0:
            return 0
        recipients = broadcasts.queued_recipients(conn, broadcast["id"], allowance)
        if send_limit is not None:
            try:
                for _ in recipients:
                    limits.consume(conn, bot.id, [send_limit])
            except RateLimited:  # cannot happen inside our allowance; be safe
                return 0
        outcomes = deliver_recipients(conn, sender, recipients)
        broadcasts.record_outcomes(conn, broadcast["id"], outcomes)
        failed = sum(1 for outcome in outcomes if outcome.error_code is not None)
        conn.after_commit(lambda: (metrics.broadcast_recipients("sent", len(outcomes) - failed),
                                    metrics.broadcast_recipients("failed", failed)))
    return len(outcomes)
