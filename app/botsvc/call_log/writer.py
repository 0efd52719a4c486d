"""Writing the call log without ever failing or delaying a call.

A call's record is made when its answer is known and handed to this
process's ``CallLogWriter``, a small in-memory buffer, or written with the
call's own rows; never by waiting for the write lock longer than a moment:

- while this process answers its /v2 calls one at a time (as a test, or a
  quiet bot, makes them one after another), a call that runs the method in
  a write transaction writes its record there, with its own rows
  (``may_write_in_call``; app/botsvc/call_log/capture.py), and any other record is
  written at once, in its own transaction, before the answer is sent, if
  the write lock is free within ORDER_WAIT_SECONDS (a job or another worker
  may hold it for a moment). A record is then in the database before its
  caller can make its next call, so records follow the calls' order across
  worker processes;
- once two calls have been answered side by side in this process (within
  the last OVERLAP_MEMORY_SECONDS), or when the lock is busy, a background
  thread of this process writes the buffer every BATCH_SECONDS, in one
  transaction, waiting for the lock itself. A transaction of its own costs
  several inserts (one per record cost 31% of sendMessage's throughput,
  measured), so under load the log costs about an insert a call. Calls that
  ran side by side on different workers then land in the order their
  batches were written.

Best effort, by design: a batch the database refuses (a full disk, an
error) is dropped and counted, with a warning at most once a minute;
records still in memory when a process dies are lost; past
MAX_PENDING_BYTES buffered (a database stuck for long), new ones are
dropped. What a call answers never depends on any of it.
"""
from __future__ import annotations

import contextlib
import logging
import random
import sqlite3
import threading
import time

from botsvc.db import WriteLockBusy, connect, thread_connection, transaction
from botsvc.domain import call_records
from botsvc.domain.call_log import CallRecord
from botsvc.errors import ApiError

log = logging.getLogger(__name__)

EXTENSION = "botsvc.call_log"   # the app's CallLogWriter in app.extensions (none: BOTSVC_CALL_LOG=0)
BATCH_SECONDS = 0.2
OVERLAP_MEMORY_SECONDS = 1.0
ORDER_WAIT_SECONDS = 0.02     # how long a lone call's record may wait for the lock
MAX_PENDING_BYTES = 8 * 1024 * 1024
RECORDS_PER_TRANSACTION = 500
IDLE_SECONDS = 30.0          # the background thread ends after this long idle
WARN_EVERY_SECONDS = 60.0
_RECORD_OVERHEAD_BYTES = 200  # what a record costs besides its params and result


class CallLogWriter:
    """The call log's buffer and writer for one database, in one process."""

    def __init__(self, db_path: str):
        self.db_path = db_path
        self._lock = threading.Lock()
        self._in_flight = 0            # /v2 calls of this process not answered yet
        self._overlapped_at = float("-inf")   # when a call last began beside another
        self._records: list[CallRecord] = []
        self._polls: dict[int, tuple[int, int]] = {}   # bot_id: (empty polls, date)
        self._pending_bytes = 0
        self._writing = 0              # batches taken and not yet written
        self._wake = threading.Event()
        self._thread: threading.Thread | None = None
        self.dropped = 0
        self._dropped_unreported = 0
        self._warned_at = float("-inf")
        self._trim_countdown: dict[int, int] = {}   # bot_id: records until its next trim

    # -- what a call hands over -------------------------------------------------
    def call_started(self) -> None:
        with self._lock:
            if self._in_flight:
                self._overlapped_at = time.monotonic()
            self._in_flight += 1

    def call_answered(self, record: CallRecord | None = None,
                      poll: tuple[int, int, bool] | None = None) -> None:
        """The call's record (None: not a known bot's, or an empty poll), and
        for a getUpdates ``(bot_id, date, empty)``."""
        size = _size(record) if record is not None else 0
        with self._lock:
            self._in_flight -= 1
            if poll is not None:
                bot_id, date, empty = poll
                count, last = self._polls.get(bot_id, (0, date))
                self._polls[bot_id] = (count + empty, max(last, date))
            full = self._pending_bytes + size > MAX_PENDING_BYTES
            if record is not None and not full:
                self._records.append(record)
                self._pending_bytes += size
        if record is not None and full:
            self._drop(1)

    def may_write_in_call(self) -> bool:
        """Whether the call being answered may write its record inside its
        own transaction: it is this process's only call, with no other
        side by side lately (the lone call of ``write_soon``), and no
        earlier record waits or is being written (it would land after)."""
        with self._lock:
            return (self._in_flight == 1 and not self._records and not self._polls
                    and not self._writing
                    and time.monotonic() - self._overlapped_at >= OVERLAP_MEMORY_SECONDS)

    def call_ended_unbuffered(self) -> None:
        """A call that leaves nothing in the buffer is no longer in flight:
        its record went with its own transaction, or it unwound with no
        answer (parked until its body has arrived, to run again whole)."""
        with self._lock:
            self._in_flight -= 1

    def trims_due(self, records: list[CallRecord]) -> list[int]:
        """The bots of ``records`` to trim back to their bound with them:
        each about every TRIM_SLACK records this process writes for it. The
        first countdown starts at random, so a process that writes fewer
        than TRIM_SLACK records for a bot in its life still trims its share."""
        due = []
        with self._lock:
            for record in records:
                left = self._trim_countdown.get(record.bot_id) \
                    or random.randint(1, call_records.TRIM_SLACK)
                if left == 1:
                    due.append(record.bot_id)
                    left = call_records.TRIM_SLACK + 1
                self._trim_countdown[record.bot_id] = left - 1
        return list(dict.fromkeys(due))

    # -- writing ------------------------------------------------------------------
    def write_soon(self) -> None:
        """Once a call's answer is known, before it is sent: write the buffer
        now if this process answers its calls one at a time and the write
        lock is free within ORDER_WAIT_SECONDS, else leave it to the
        background thread. Never raises."""
        if self._in_flight or time.monotonic() - self._overlapped_at < OVERLAP_MEMORY_SECONDS:
            self._start_background_writer()
            return
        self.write_if_free(ORDER_WAIT_SECONDS)

    def write_if_free(self, patience: float = 0.0) -> None:
        """Write the buffer now if the write lock is free (getBotCalls: what
        this process holds, before it reads), asking again for ``patience``
        seconds, else leave it to the thread."""
        deadline = time.monotonic() + patience
        while True:
            try:
                self._write(thread_connection(self.db_path), wait=False)
                return
            except WriteLockBusy:
                if time.monotonic() >= deadline:
                    self._start_background_writer()
                    return
                time.sleep(0.001)
            except Exception:   # noqa: BLE001 - best effort: never the caller's failure
                log.exception("the call log could not be written")
                return

    def _write(self, conn: sqlite3.Connection, *, wait: bool) -> None:
        while True:
            records, polls = self._take()
            if not records and not polls:
                return
            try:
                with transaction(conn, wait=wait):
                    call_records.write(conn, records, polls, self.trims_due(records))
            except WriteLockBusy:
                self._put_back(records, polls)
                raise
            except (ApiError, sqlite3.Error) as error:   # STORAGE_FULL, or worse
                self._drop(len(records), error)
            finally:
                with self._lock:
                    self._writing -= 1

    def _take(self) -> tuple[list[CallRecord], dict[int, tuple[int, int]]]:
        with self._lock:
            records = self._records[:RECORDS_PER_TRANSACTION]
            del self._records[:RECORDS_PER_TRANSACTION]
            self._pending_bytes -= sum(_size(r) for r in records)
            polls, self._polls = self._polls, {}
            if records or polls:
                self._writing += 1
        return records, polls

    def _put_back(self, records: list[CallRecord], polls: dict[int, tuple[int, int]]) -> None:
        with self._lock:
            self._records[:0] = records
            self._pending_bytes += sum(_size(r) for r in records)
            for bot_id, (count, date) in polls.items():
                now_count, now_date = self._polls.get(bot_id, (0, date))
                self._polls[bot_id] = (count + now_count, max(date, now_date))

    def _drop(self, count: int, error: BaseException | None = None) -> None:
        with self._lock:
            self.dropped += count
            self._dropped_unreported += count
            now = time.monotonic()
            if now - self._warned_at < WARN_EVERY_SECONDS:
                return
            self._warned_at, unreported, self._dropped_unreported = \
                now, self._dropped_unreported, 0
        log.warning("call log: %d records not written (%s)", unreported,
                    _why(error) if error else "too many waiting")

    # -- the background thread ----------------------------------------------------
    def _start_background_writer(self) -> None:
        if self._wake.is_set():
            return   # a write is due already: it will take this record too
        with self._lock:
            if self._thread is None:
                self._thread = threading.Thread(target=self._run, name="call-log-writer",
                                                daemon=True)
                self._thread.start()
        self._wake.set()

    def _run(self) -> None:
        conn = connect(self.db_path)
        try:
            while True:
                if not self._wake.wait(IDLE_SECONDS):
                    with self._lock:
                        if not self._records and not self._polls:
                            self._thread = None
                            return
                time.sleep(BATCH_SECONDS)   # the calls answered meanwhile join the batch
                self._wake.clear()
                try:
                    self._write(conn, wait=True)
                except Exception:   # noqa: BLE001 - the thread goes on for the next records
                    log.exception("the call log could not be written")
        finally:
            with contextlib.suppress(sqlite3.Error):
                conn.close()


def _size(record: CallRecord) -> int:
    return _RECORD_OVERHEAD_BYTES + len(record.params or b"") + len(record.result or b"")


def _why(error: BaseException) -> str:
    """The reason in a word or two (never a message that could hold data)."""
    code = getattr(error, "code", None)
    return str(code.value) if code is not None else type(error).__name__
