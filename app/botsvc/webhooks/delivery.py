"""The webhook delivery worker.

A pass of the job ``deliver_due_webhooks`` (ticked every second in every
process, and woken at once in the process that records an update) claims the
due queue heads, one per bot, as many as this process has free delivery
slots, and hands them to a small thread pool. The pass itself returns at once.
In the pool, each attempt runs outside any transaction (re-resolving the name,
checking every address, pinning the connection: ``transport.deliver_kept``,
over the bot's kept connection when it still goes to an allowed address,
``connections.py``); its
outcome is then recorded in one write transaction that, after a success, also
claims the bot's next update, so a busy bot's queue drains back to back. A
receiver that hangs holds one slot for at most the 10 s deadline and delays no
other bot.

Each attempt is also recorded for getWebhookDeliveries (when it started on
the service clock, how long it took, the status or error, and the request
and response, bounded and redacted by ``exchange.py``).

Tests substitute ``resolver`` (DNS) and ``ATTEMPT_TIMEOUT``; time is the
service clock (``botsvc.clock``), which they move through ``clock.machine_clock``.
"""
from __future__ import annotations

import functools
import logging
import os
import threading
import time
from concurrent.futures import ThreadPoolExecutor

from botsvc import clock, metrics
from botsvc.config import Settings
from botsvc.db import thread_connection
from botsvc.domain import webhooks
from botsvc.domain.webhook_deliveries import Attempt
from botsvc.domain.webhooks import Claim, Outcome
from botsvc.jobs import DELIVER_WEBHOOKS, action, wake
from botsvc.webhooks import transport
from botsvc.webhooks.addresses import default_resolver
from botsvc.webhooks.connections import KeptConnections

log = logging.getLogger(__name__)

SLOTS_PER_PROCESS = 16
# Longer than any attempt (a 10 s deadline after the DNS answer), so a lease
# only ever expires when its holder died; then that bot waits this long.
LEASE_SECONDS = 60.0
ATTEMPT_TIMEOUT = transport.DEFAULT_TIMEOUT

resolver = default_resolver


@functools.lru_cache(maxsize=4)
def _extra_ca_data(path: str | None) -> str | None:
    if path is None:
        return None
    with open(path, encoding="ascii") as fh:
        return fh.read()


def _options(settings: Settings) -> transport.DeliveryOptions:
    """Read at each attempt: tests substitute ``resolver`` and ``ATTEMPT_TIMEOUT``."""
    return transport.DeliveryOptions(
        allow_private=settings.webhook_allow_private, resolve=resolver, timeout=ATTEMPT_TIMEOUT,
        extra_ca_data=_extra_ca_data(settings.webhook_ca_bundle))


class _Entry:
    __slots__ = ("outcome", "following", "failure", "done", "wake")

    def __init__(self, outcome: Outcome):
        self.outcome = outcome
        self.following: Claim | None = None
        self.failure: BaseException | None = None
        self.done = False
        self.wake = threading.Lock()   # held until the entry is recorded or must lead
        self.wake.acquire()


class GroupCommit:
    """The outcomes of this process's delivery threads, recorded together.

    A thread that finished an attempt queues its outcome; if no transaction is
    under way it records everything queued so far in one (it leads), else it
    sleeps until its outcome is recorded by the leader, or until it is woken
    to lead the next transaction. One bot alone never waits; bots delivering
    at once share a commit, whose cost (writing the pages to the WAL) was
    half of what recording an attempt took. A transaction that fails is
    retried one outcome at a time, so each thread sees its own failure."""

    def __init__(self):
        self._lock = threading.Lock()
        self._queued: list[_Entry] = []
        self._leading = False

    def record(self, conn, outcome: Outcome) -> Claim | None:
        entry = _Entry(outcome)
        with self._lock:
            self._queued.append(entry)
            follow, self._leading = self._leading, True
        if follow:
            entry.wake.acquire()
            if entry.done:
                return _result(entry)
        with self._lock:
            batch, self._queued = self._queued, []
        try:
            self._commit(conn, batch)
        finally:
            for done in batch:
                done.done = True
            with self._lock:
                successor = self._queued[0] if self._queued else None
                self._leading = successor is not None
            for done in batch:
                if done is not entry:
                    done.wake.release()
            if successor is not None:
                successor.wake.release()   # it leads the next transaction
        return _result(entry)

    @staticmethod
    def _commit(conn, batch: list[_Entry]) -> None:
        if len(batch) > 1 and _record_together(conn, batch):
            return
        for entry in batch:
            _record_together(conn, [entry])


def _record_together(conn, group: list[_Entry]) -> bool:
    """Record ``group`` in one transaction; on failure, each entry keeps it."""
    try:
        claims = webhooks.record_attempts(conn, [e.outcome for e in group], clock.time(),
                                          LEASE_SECONDS)
    except Exception as failure:
        for entry in group:
            entry.failure = failure
        return False
    for entry, following in zip(group, claims, strict=True):
        entry.following, entry.failure = following, None
    return True


def _result(entry: _Entry) -> Claim | None:
    if entry.failure is not None:
        raise entry.failure
    return entry.following


class Deliverer:
    """This process's delivery slots for one database."""

    def __init__(self, settings: Settings, slots: int = SLOTS_PER_PROCESS):
        self.settings = settings
        self.slots = slots
        self._pool = ThreadPoolExecutor(max_workers=slots, thread_name_prefix="webhook")
        self._lock = threading.Condition()
        self._busy = 0
        self.kept = KeptConnections()
        self.recorder = GroupCommit()

    def run_pass(self, conn) -> int:
        """Claim what is due (up to the free slots) and start delivering it;
        returns the number of bots claimed."""
        self.kept.close_idle()
        with self._lock:
            free = self.slots - self._busy
        if free <= 0:
            return 0   # a finishing delivery wakes the job again
        now = clock.time()
        if not webhooks.any_due(conn, now):
            return 0
        claims = webhooks.claim_due(conn, now, free, LEASE_SECONDS)
        with self._lock:
            self._busy += len(claims)
        for claim in claims:
            self._pool.submit(self._deliver_queue, claim)
        return len(claims)

    def wait_idle(self, timeout: float = 30.0) -> bool:
        """True once no delivery is running here (for tests and shutdown)."""
        with self._lock:
            return self._lock.wait_for(lambda: self._busy == 0, timeout)

    def shutdown(self) -> None:
        self._pool.shutdown(wait=True)
        self.kept.close_all()

    def _deliver_queue(self, claim: Claim | None) -> None:
        try:
            conn = thread_connection(self.settings.db_path)
            while claim is not None:
                claim = self._attempt(conn, claim)
        except Exception:
            # The lease stays and expires: the update is retried then.
            log.exception("webhook delivery for a bot failed unexpectedly")
        finally:
            with self._lock:
                self._busy -= 1
                self._lock.notify_all()
            wake(DELIVER_WEBHOOKS)   # a slot is free; other bots' heads may be waiting for one

    def _attempt(self, conn, claim: Claim) -> Claim | None:
        started_at, started = clock.now(), time.monotonic()
        started_ns = clock.order_stamp()   # before the bot can have the update
        result, keep = transport.deliver_kept(
            claim.url, claim.body, claim.secret_token, _options(self.settings),
            kept=self.kept.take(claim.bot_id, claim.generation))
        self.kept.give(claim.bot_id, claim.generation, keep)
        if not result.ok:
            # Neither the URL (it may carry the owner's own secret) nor the
            # secret_token is logged; the error names the host at most.
            log.info("webhook delivery of update %d to bot %d failed: %s",
                     claim.update_id, claim.bot_id, result.error)
        attempt = Attempt(started_at, round((time.monotonic() - started) * 1000), result.status,
                          result.request, result.response, started_ns)
        following = self.recorder.record(conn, Outcome(claim, result.ok, result.error, attempt))
        metrics.webhook_attempt(result.ok)
        return following


_deliverers: dict[Settings, Deliverer] = {}
_deliverers_lock = threading.Lock()
_pid = os.getpid()


def deliverer_for(settings: Settings) -> Deliverer:
    """This process's Deliverer for ``settings``, made on first use (after any
    fork: a thread pool does not survive one)."""
    global _pid
    with _deliverers_lock:
        if _pid != os.getpid():
            _deliverers.clear()
            _pid = os.getpid()
        deliverer = _deliverers.get(settings)
        if deliverer is None:
            deliverer = _deliverers[settings] = Deliverer(settings)
        return deliverer


def forget_deliverer(settings: Settings) -> None:
    """Wait for and drop the Deliverer of ``settings`` (test teardown)."""
    with _deliverers_lock:
        deliverer = _deliverers.pop(settings, None)
    if deliverer is not None:
        deliverer.shutdown()


@action(DELIVER_WEBHOOKS)
def deliver_due_webhooks(conn, settings: Settings) -> None:
    """One pass of the job: claim the due queue heads (one per bot, as many as
    this process has free slots) and hand them to this process's delivery pool.
    Every process runs it; each claim is a row's lease in SQLite."""
    deliverer_for(settings).run_pass(conn)
