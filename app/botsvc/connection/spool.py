"""Where parked bodies wait (app/botsvc/connection/body.py), and what they may hold.

A parked body is read by the worker's main loop into a spool: memory up to
SPOOL_MEMORY_BYTES, then an unnamed file in the data directory (the disk
uploads end on; /tmp may be memory). Without a bound, clients that each
declare a large upload and trickle it could fill that disk and hold it for
as long as the body deadline lets them (15 minutes), and one token could
hold every connection a worker accepts. So each worker keeps a ``Ledger``
of its parked bodies, per caller (the credential the app let through) and in
all, and a request parks only if the ledger admits it:

- at most ``caller_requests`` parked requests per caller for as long as
  their deadline allows; one more parks *on probation*: its body must be
  whole within PROBATION_SECONDS, or it is refused 429 RATE_LIMITED, retry
  after 1 s (so the caller's small calls still get through, and its flood
  holds a connection no longer than a slow head does);
- at most ``caller_bytes`` per caller and ``total_bytes`` in all, counted by
  what a body declares (a chunked one by what has arrived), and never so
  much that free space under the data dir would fall below
  ``min_free_bytes`` (BOTSVC_MIN_FREE_BYTES): past any of these,
  503 STORAGE_FULL, before a byte more of the body is read.

A body past SPOOL_MEMORY_BYTES is counted twice against the disk: a parked
upload is copied from its spool into the quarantine before its spool is let
go. One that stays in memory takes nothing from the disk. Every write to a
spool on disk checks the free space again (others write to that disk too),
and refuses with STORAGE_FULL rather than go below the reserve. A refused
body is answered whole, in the envelope, and its connection closed.
"""
from __future__ import annotations

import hashlib
import tempfile
import threading
from dataclasses import dataclass

from botsvc import disk

SPOOL_MEMORY_BYTES = 64 * 1024
# A caller's request parked past its bound has this long to arrive whole:
# time enough for a small body sent apart from its head (it waits for the ACK
# of the head, 40 ms or more), too little to hold a connection.
PROBATION_SECONDS = 1.0


@dataclass(frozen=True)
class Bounds:
    data_dir: str
    min_free_bytes: int     # BOTSVC_MIN_FREE_BYTES
    total_bytes: int        # BOTSVC_SPOOL_MAX_BYTES: all of a worker's parked bodies
    caller_bytes: int       # BOTSVC_SPOOL_TOKEN_MAX_BYTES
    caller_requests: int    # BOTSVC_SPOOL_TOKEN_MAX_REQUESTS


class Holding:
    """One parked body's share of the ledger."""
    __slots__ = ("caller", "counted", "written", "probation")

    def __init__(self, caller: str, probation: bool):
        self.caller = caller
        self.counted = 0            # bytes counted against the bounds
        self.written = 0            # of them, in the spool
        # Parked past its caller's bound: whole within PROBATION_SECONDS, or refused.
        self.probation = probation


class Ledger:
    """A worker's parked bodies: admitted by its threads, grown and let go by
    its main loop (hence the lock)."""

    def __init__(self, bounds: Bounds):
        self.bounds = bounds
        self._lock = threading.Lock()
        self._callers: dict[str, list] = {}   # caller -> [holdings, bytes]
        self._total = 0
        self._unwritten = 0         # counted, not yet in a spool: promised disk

    def admit(self, caller: str, expected: int) -> Holding:
        """A request of ``caller`` parks with ``expected`` bytes still to come;
        raises the refusal (see the module) when it may not."""
        with self._lock:
            holdings = self._callers.get(caller, ((),))[0]
            parked = sum(not holding.probation for holding in holdings)
            holding = Holding(caller, probation=parked >= self.bounds.caller_requests)
            self._count(holding, expected)
            self._callers[caller][0].append(holding)
            return holding

    def grow(self, holding: Holding, more: int) -> None:
        """``more`` bytes beyond what was counted (a chunked body arriving)."""
        with self._lock:
            self._count(holding, more)

    def _count(self, holding: Holding, more: int) -> None:
        bounds = self.bounds
        share = self._callers.get(holding.caller) or [[], 0]
        if share[1] + more > bounds.caller_bytes or self._total + more > bounds.total_bytes:
            raise disk.storage_full("Too many request bodies are still arriving; retry later")
        # A body that stays in memory takes nothing from the disk: a read (a
        # getMe whose body came apart from its head) is answered on a full disk.
        if bounds.min_free_bytes and holding.counted + more > SPOOL_MEMORY_BYTES and (
                disk.free_bytes(bounds.data_dir) - self._unwritten - 2 * more
                < bounds.min_free_bytes):
            raise disk.storage_full()
        holding.counted += more
        self._total += more
        self._unwritten += more
        share[1] += more
        self._callers[holding.caller] = share

    def write(self, holding: Holding, spool, data: bytes) -> None:
        """``data`` into ``holding``'s spool; a full disk, or one whose free
        space this would take below the reserve, is STORAGE_FULL."""
        if spool.tell() + len(data) > SPOOL_MEMORY_BYTES and self.bounds.min_free_bytes and (
                disk.free_bytes(self.bounds.data_dir) - len(data) < self.bounds.min_free_bytes):
            raise disk.storage_full()
        try:
            spool.write(data)
        except OSError as exc:
            if disk.is_full_oserror(exc):
                raise disk.storage_full() from None
            raise
        written = min(len(data), holding.counted - holding.written)
        with self._lock:
            holding.written += written
            self._unwritten -= written

    def release(self, holding: Holding) -> None:
        """The body is whole (or refused, or gone): its share is let go."""
        with self._lock:
            self._total -= holding.counted
        self._unwritten -= holding.counted - holding.written
        share = self._callers[holding.caller]
        share[0].remove(holding)
        share[1] -= holding.counted
        if not share[0]:
            del self._callers[holding.caller]
        holding.counted = holding.written = 0


def caller_of(environ: dict) -> str:
    """Whom a parked request's bytes count against: the credential the app
    let through (a bot's or the operator's token, a sandbox session), else
    the client's address. Kept as a digest, never as the token itself."""
    authorization = (environ.get("HTTP_AUTHORIZATION") or "").split()
    credential = (authorization[-1] if authorization else environ.get("HTTP_COOKIE")
                  or environ.get("REMOTE_ADDR") or "")
    return hashlib.sha256(credential.encode("latin-1", "replace")).hexdigest()


def new_spool(directory: str):
    """Memory up to SPOOL_MEMORY_BYTES, then an unnamed file in ``directory``."""
    return tempfile.SpooledTemporaryFile(max_size=SPOOL_MEMORY_BYTES, dir=directory)
