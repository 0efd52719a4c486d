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
"""
from __future__ import annotations

import json
import logging
import sqlite3
import time
from collections.abc import Callable
from dataclasses import dataclass

from marshmallow import ValidationError

from botsvc import limits, metrics
from botsvc.api.registry import METHODS, Call
from botsvc.auth import Bot
from botsvc.catalogue.validation import translate_error
from botsvc.config import Settings
from botsvc.contract import CHAT_ID_HEX_DIGITS, CHAT_ID_PREFIX
from botsvc.db import transaction
from botsvc.domain import broadcasts
from botsvc.domain.bots import find_bot
from botsvc.domain.chats import check_active
from botsvc.errors import ApiError, ErrorCode, RateLimited, invalid
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

BROADCAST_METHODS = ("sendMessage", "sendPhoto", "sendVoice", "sendVideo", "sendAudio",
                     "sendDocument", "sendAnimation", "sendCard")
NOT_IN_BULK = ("chat_id", "reply_to_message_id")
# Stands in for the recipient while a payload is checked without one; any
# well-formed chat_id would do, the schema only checks the shape.
PLACEHOLDER_CHAT_ID = CHAT_ID_PREFIX + "0" * CHAT_ID_HEX_DIGITS


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


def validate_payload(method_name: str, payload: dict) -> dict:
    """The payload checked by the method's own schema (the one validator), as
    if sent with a chat_id; errors name field ``payload`` and give the path."""
    method = METHODS.get(method_name)
    if method_name not in BROADCAST_METHODS:
        raise invalid("method", f"method must be one of {', '.join(BROADCAST_METHODS)}")
    if method is None or method.schema is None:
        raise invalid("method", f"method {method_name} is not available on this server")
    for name in NOT_IN_BULK:
        if name in payload:
            raise invalid("payload", f"payload.{name}: not allowed in a broadcast",
                          path=f"payload.{name}")
    try:
        loaded = method.schema.load({**payload, "chat_id": PLACEHOLDER_CHAT_ID})
    except ValidationError as err:
        raise translate_error({"payload": err.messages}) from None
    loaded.pop("chat_id", None)
    return loaded


@dataclass(frozen=True)
class Sender:
    """``one(chat_id) -> Message`` through the method's own path, and, when
    the method has one, ``many(chats) -> [Message]``: the same for many
    active chats in one go (``Method.send_to_many``)."""
    one: Callable[[str], dict]
    many: Callable[[list[sqlite3.Row]], list[dict]] | None = None


def make_sender(conn: sqlite3.Connection, settings: Settings, bot: Bot, method_name: str,
                payload: dict) -> Sender:
    """The method's sender for this payload. Its prepare step (if any) runs
    here, outside the write transaction, as the dispatcher runs it; a
    broadcast payload has no file parts, so it depends on the payload alone.
    A payload that no longer passes gives a sender that fails every
    recipient with that error."""
    try:
        params = validate_payload(method_name, payload)
        method = METHODS[method_name]
        prepared = None
        if method.prepare is not None:
            prepared = method.prepare(Call(conn, settings, bot, method_name, dict(params)))
    except ApiError as error:
        setup_error = error

        def fail(chat_id: str) -> dict:
            raise setup_error
        return Sender(fail)

    def send(chat_id: str) -> dict:
        call = Call(conn, settings, bot, method_name, {**params, "chat_id": chat_id},
                    prepared=prepared)
        return method.handler(call)

    many = None
    if method.send_to_many is not None:
        def many(chats: list[sqlite3.Row]) -> list[dict]:
            call = Call(conn, settings, bot, method_name, dict(params), prepared=prepared)
            return method.send_to_many(call, chats)
    return Sender(send, many)


class _Rollback(Exception):
    pass


def try_payload(conn: sqlite3.Connection, settings: Settings, bot: Bot, method_name: str,
                payload: dict, chat: sqlite3.Row) -> None:
    """Send the payload to ``chat`` and undo it, so that what only the handler
    checks (say, a file_id that is unknown or of the wrong kind) is refused at
    createBroadcast as a payload error instead of failing every recipient.
    Runs inside createBroadcast's transaction: with no file parts in a
    broadcast payload, a prepare step has no slow work to do."""
    send = make_sender(conn, settings, bot, method_name, payload).one
    try:
        with transaction(conn):  # a savepoint, always rolled back
            send(chat["chat_id"])
            raise _Rollback
    except _Rollback:
        return
    except ApiError as error:
        if error.code != ErrorCode.INVALID_PARAMETER:
            return  # about this chat, not the payload; the worker will record it
        raise as_payload_error(error) from None


def check_payload_references(conn: sqlite3.Connection, bot_id: int, method_name: str,
                             payload: dict) -> None:
    """What the payload refers to (a file_id: known, this bot's, clean, of the
    method's kind), checked whether or not any member is there to try it on."""
    check = METHODS[method_name].check_references
    if check is None:
        return
    try:
        check(conn, bot_id, payload)
    except ApiError as error:
        raise as_payload_error(error) from None


def as_payload_error(error: ApiError) -> ApiError:
    """A method's INVALID_PARAMETER restated against createBroadcast's payload."""
    field = error.parameters.get("field", "")
    extra = {k: v for k, v in error.parameters.items() if k not in ("field", "path")}
    path = error.parameters.get("path", field)
    return invalid("payload", error.description, path=f"payload.{path}", **extra)


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
