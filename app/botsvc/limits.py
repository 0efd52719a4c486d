"""Per-bot rate limits shared by every server process (GCRA in SQLite).

The whole state of a limit is one theoretical arrival time (TAT) per bot and
bucket, kept in ``rate_limits`` on the service clock (so ``advanceClock``
refills the buckets); a request is allowed while the TAT is no more
than the burst tolerance ahead of now. In-process counters would count per
worker and multiply the limit by the number of workers.
"""
from __future__ import annotations

import functools
import math
import sqlite3
import threading
from dataclasses import dataclass
from functools import cached_property

from botsvc import clock, metrics
from botsvc.config import Settings
from botsvc.errors import RateLimited

API = "api"
SEND = "send"
UPLOAD = "upload"
BROADCAST = "broadcast"
BUCKETS = (API, SEND, UPLOAD, BROADCAST)


@dataclass(frozen=True)
class Limit:
    bucket: str
    count: int        # requests allowed per period, also the burst size
    period: float     # seconds

    # Cached: read on every call, inside the write transaction.
    @cached_property
    def interval(self) -> float:
        return self.period / self.count

    @cached_property
    def tolerance(self) -> float:
        return self.period - self.interval

    @cached_property
    def slack(self) -> float:
        """Room for float rounding in the TAT: it is a running sum of intervals
        on a clock near 2**31 s, where each addition may be off by ~1e-7 s, so an
        exact comparison refused the last request of a full burst. A millisecond
        (at most half an interval) absorbs that and never admits an extra request."""
        return min(0.001, self.interval / 2)


def configured_limits(settings: Settings) -> dict[str, Limit]:
    """The limits in force; a setting of 0 turns that limit off (absent here)."""
    return _limits_of(settings.rate_api_per_sec, settings.rate_sends_per_sec,
                      settings.rate_uploads_per_min, settings.rate_broadcasts_per_min)


@functools.lru_cache(maxsize=16)
def _limits_of(api: int, sends: int, uploads: int, broadcasts: int) -> dict[str, Limit]:
    # Made once per setting values, not on every request (read-only after).
    pairs = {API: (api, 1.0), SEND: (sends, 1.0), UPLOAD: (uploads, 60.0),
             BROADCAST: (broadcasts, 60.0)}
    return {bucket: Limit(bucket, count, period)
            for bucket, (count, period) in pairs.items() if count > 0}


def _stored_tats(conn: sqlite3.Connection, bot_id: int, buckets: list[str]) -> dict[str, float]:
    marks = ",".join("?" * len(buckets))
    rows = conn.execute(
        f"SELECT bucket, tat FROM rate_limits WHERE bot_id = ? AND bucket IN ({marks})",
        (bot_id, *buckets),
    )
    return {row[0]: row[1] for row in rows}


def consume(conn: sqlite3.Connection, bot_id: int, limits: list[Limit],
            now: float | None = None) -> None:
    """Take one request from every given limit, or none of them.

    Must run inside the caller's write transaction, so that the read and the
    write of the TAT are one step for every process. Raises RateLimited with
    the longest wait among the limits that refuse.
    """
    if not limits:
        return
    now = clock.time() if now is None else now
    tats = _stored_tats(conn, bot_id, [limit.bucket for limit in limits])
    new_tats = _take(limits, tats, now)
    conn.executemany(
        "INSERT INTO rate_limits (bot_id, bucket, tat) VALUES (?, ?, ?)"
        " ON CONFLICT (bot_id, bucket) DO UPDATE SET tat = excluded.tat",
        [(bot_id, bucket, tat) for bucket, tat in new_tats.items()],
    )


def _take(limits: list[Limit], tats: dict[str, float], now: float) -> dict[str, float]:
    """The new TAT of every limit, or RateLimited with the longest wait."""
    wait = 0.0
    new_tats = {}
    refused = None
    for limit in limits:
        tat = max(tats.get(limit.bucket, now), now)
        ahead = tat - now
        if ahead > limit.tolerance + limit.slack:
            if ahead - limit.tolerance > wait:
                wait, refused = ahead - limit.tolerance, limit.bucket
            continue
        new_tats[limit.bucket] = tat + limit.interval
    if refused is not None:
        metrics.rate_limited(refused)
        raise RateLimited(wait, refused)
    return new_tats


# While the disk is full the shared TATs cannot be written, and a read that
# writes nothing else still answers (app/botsvc/api/run.py). Its rate is then
# taken from this process's own TATs, which start from the stored ones: the
# limit still holds in each process, and a bot that was over it stays over.
_unrecorded: dict[tuple[int, str], float] = {}
_unrecorded_lock = threading.Lock()


def consume_unrecorded(conn: sqlite3.Connection, bot_id: int, limits: list[Limit],
                       now: float | None = None) -> None:
    """``consume`` for a disk that cannot take the write: reads the stored
    TATs, records the request in this process only."""
    if not limits:
        return
    now = clock.time() if now is None else now
    stored = _stored_tats(conn, bot_id, [limit.bucket for limit in limits])
    with _unrecorded_lock:
        tats = {limit.bucket: max(stored.get(limit.bucket, now),
                                  _unrecorded.get((bot_id, limit.bucket), now))
                for limit in limits}
        for bucket, tat in _take(limits, tats, now).items():
            _unrecorded[(bot_id, bucket)] = tat


def headroom(conn: sqlite3.Connection, bot_id: int, limit: Limit,
             now: float | None = None) -> int:
    """How many requests the limit would allow right now (for background
    senders that must leave room for a bot's interactive sends)."""
    now = clock.time() if now is None else now
    tat = max(_stored_tats(conn, bot_id, [limit.bucket]).get(limit.bucket, now), now)
    return max(0, math.floor((limit.tolerance + limit.slack - (tat - now)) / limit.interval) + 1)
