"""SQLite access: connections and the one transaction helper (the migration
runner is app/botsvc/migrations.py).

Rules this module enforces, so that several worker processes share one
database file without "database is locked" failures or lost writes:
connections are opened in autocommit mode (``isolation_level=None``) and every
write unit starts with ``BEGIN IMMEDIATE``, so a writer waits on the busy
timeout instead of failing at once; per-connection pragmas are set on every
connection; nothing opens the database at import time.
"""
from __future__ import annotations

import fcntl
import logging
import os
import sqlite3
import threading

from flask import current_app, g

from botsvc import disk

log = logging.getLogger(__name__)

BUSY_TIMEOUT_MS = 15000


class Connection(sqlite3.Connection):
    """A connection that queues its writers on a file lock beside the database.

    SQLite's busy handler polls with sleeps of up to 100 ms, so under several
    writers most of the time goes to sleeping (p99 60 ms measured at 8
    concurrent senders). ``flock`` queues them in the kernel instead: the next
    writer wakes the moment the lock is released, and a crashed holder's lock
    is freed with its process. The busy timeout stays as the fallback for
    writers that do not take the lock (migrations, checkpoints).
    """

    write_lock_fd: int | None = None
    db_path: str | None = None

    def __init__(self, *args, **kwargs):
        super().__init__(*args, **kwargs)
        # What the open transaction announces once it commits, and what undoes
        # its side effects (files written beside rows) if it rolls back.
        self.commit_hooks: list = []
        self.rollback_hooks: list = []
        self.savepoints = 0   # open savepoints of the current transaction (botsvc.db.transaction)

    def after_commit(self, callback) -> None:
        """Run ``callback`` once the current transaction commits (now, if none
        is open); dropped if it rolls back. For wake-ups that must not race
        the data they announce."""
        if self.in_transaction:
            self.commit_hooks.append(callback)
        else:
            callback()

    def on_rollback(self, callback) -> None:
        """Run ``callback`` if what is being written is rolled back (the
        current savepoint, or the outermost transaction, its COMMIT failing
        included): for files written beside rows that then never came to be
        (a full disk at COMMIT must leave no orphan file)."""
        if not self.in_transaction:
            raise RuntimeError("on_rollback needs an open transaction")
        self.rollback_hooks.append(callback)

    def acquire_write_lock(self) -> None:
        if self.write_lock_fd is not None:
            fcntl.flock(self.write_lock_fd, fcntl.LOCK_EX)

    def try_acquire_write_lock(self) -> bool:
        """The lock if no other writer holds it; False at once otherwise."""
        if self.write_lock_fd is None:
            return True
        try:
            fcntl.flock(self.write_lock_fd, fcntl.LOCK_EX | fcntl.LOCK_NB)
        except BlockingIOError:
            return False
        return True

    def release_write_lock(self) -> None:
        if self.write_lock_fd is not None:
            fcntl.flock(self.write_lock_fd, fcntl.LOCK_UN)

    def close(self) -> None:
        if self.write_lock_fd is not None:
            os.close(self.write_lock_fd)
            self.write_lock_fd = None
        super().close()


def connect(path: str) -> Connection:
    conn = sqlite3.connect(path, isolation_level=None, timeout=BUSY_TIMEOUT_MS / 1000,
                           check_same_thread=False, factory=Connection)
    # Its own open file description, so threads of one process queue too.
    conn.db_path = path
    conn.write_lock_fd = os.open(path + ".write-lock", os.O_RDWR | os.O_CREAT | os.O_CLOEXEC,
                                 0o600)
    conn.row_factory = sqlite3.Row
    conn.execute(f"PRAGMA busy_timeout = {BUSY_TIMEOUT_MS}")
    conn.execute("PRAGMA foreign_keys = ON")
    conn.execute("PRAGMA synchronous = NORMAL")
    conn.execute("PRAGMA journal_size_limit = 67108864")
    # No commit copies the WAL into the database: SQLite's automatic
    # checkpoint runs inside the COMMIT that crosses 1000 pages, with our
    # write lock still held, and its fsync made every writer queued behind
    # it wait (the bot's own sendMessage during a 50,000-member broadcast:
    # p99 90 ms with it, 52 ms without; docs/broadcasts.md). The job
    # ``checkpoint_wal`` does it every second instead, outside the lock (or,
    # with a replica, Litestream: app/botsvc/replication.py).
    conn.execute("PRAGMA wal_autocheckpoint = 0")
    return conn


_thread = threading.local()


def thread_connection(path: str) -> Connection:
    """This thread's connection to ``path``, kept open between requests.

    Opening per request costs more than the request: a new connection parses
    the schema, and closing the last connection of a WAL database checkpoints
    and deletes the WAL (0.7 ms measured). An idle connection in autocommit
    mode holds no snapshot, so it does not starve checkpoints; ``release_db``
    makes sure nothing is left open at the end of a request. Opened lazily in
    the thread that uses it, so no connection ever crosses fork().
    """
    conn = getattr(_thread, "conn", None)
    if conn is None or _thread.path != path:
        if conn is not None:
            conn.close()
        conn = _thread.conn = connect(path)
        _thread.path = path
    return conn


def get_db() -> Connection:
    """The request's connection (this thread's)."""
    if "db" not in g:
        g.db = thread_connection(current_app.config["SETTINGS"].db_path)
    return g.db


def release_db(_exc=None) -> None:
    """Teardown: leave the thread's connection idle, with no transaction open."""
    conn = g.pop("db", None)
    if conn is not None and conn.in_transaction:
        conn.execute("ROLLBACK")


class WriteLockBusy(Exception):
    """``transaction(conn, wait=False)`` found another writer at work."""


class transaction:   # noqa: N801 - used as a function: ``with transaction(conn):``
    """The one way to write: ``with transaction(conn): ...``.

    The outermost use runs ``BEGIN IMMEDIATE`` ... ``COMMIT`` (rolled back on
    any exception, a failed COMMIT included); a nested use becomes a
    savepoint, so a domain function can be called alone or inside a caller's
    larger unit of work. A full disk (SQLite's "database or disk is full", or
    the "disk I/O error" it becomes where SQLite maps a file) leaves as the
    contract's STORAGE_FULL (app/botsvc/disk.py), with nothing written.

    ``wait=False`` is for writes that must never make anyone wait (the call
    log, written after a call's answer): when another writer holds the write
    lock, or SQLite's own lock (a checkpoint, a backup), it raises
    WriteLockBusy at once instead of queueing.

    A class rather than a generator: every call enters two of these (the
    request's transaction and the handler's savepoint), and a generator-based
    context manager cost three times as much to enter and leave.
    """

    __slots__ = ("conn", "wait", "savepoint", "registered")

    def __init__(self, conn: Connection, *, wait: bool = True):
        self.conn = conn
        self.wait = wait
        self.savepoint: str | None = None
        self.registered = 0

    def __enter__(self) -> Connection:
        conn = self.conn
        try:
            if conn.in_transaction:
                # Named by depth: a name SQLite has seen is a prepared
                # statement reused (a new name each time is parsed anew).
                conn.savepoints += 1
                self.savepoint = f"sp_{conn.savepoints}"
                self.registered = len(conn.rollback_hooks)
                conn.execute(f"SAVEPOINT {self.savepoint}")
                return conn
            conn.savepoints = 0
            if self.wait:
                conn.acquire_write_lock()
            elif not conn.try_acquire_write_lock():
                raise WriteLockBusy()
            try:
                if self.wait:
                    conn.execute("BEGIN IMMEDIATE")
                else:
                    _begin_without_waiting(conn)
            except BaseException:
                conn.release_write_lock()
                raise
        except sqlite3.Error as exc:
            raise _translated(conn, exc) from exc
        return conn

    def __exit__(self, exc_type, exc, tb) -> None:
        try:
            if self.savepoint is not None:
                self._leave_savepoint(exc_type is not None)
            else:
                self._finish(exc_type is not None)
        except sqlite3.Error as failed:
            raise _translated(self.conn, failed) from failed
        if isinstance(exc, sqlite3.Error):
            translated = _translated(self.conn, exc)
            if translated is not exc:
                raise translated from exc

    def _leave_savepoint(self, failed: bool) -> None:
        conn, name = self.conn, self.savepoint
        conn.savepoints -= 1
        if not failed:
            conn.execute(f"RELEASE {name}")
            return
        conn.execute(f"ROLLBACK TO {name}")
        conn.execute(f"RELEASE {name}")
        hooks = conn.rollback_hooks
        undone, hooks[self.registered:] = hooks[self.registered:], []
        for callback in undone:   # what this savepoint took back
            callback()

    def _finish(self, failed: bool) -> None:
        conn = self.conn
        try:
            if not failed:
                try:
                    conn.execute("COMMIT")
                except BaseException:
                    self._roll_back()
                    raise
            else:
                self._roll_back()
                return
        finally:
            conn.release_write_lock()
        conn.rollback_hooks = []
        announced, conn.commit_hooks = conn.commit_hooks, []
        for callback in announced:
            callback()

    def _roll_back(self) -> None:
        conn = self.conn
        # A COMMIT that failed (a full disk) may leave the transaction open,
        # or SQLite may have rolled it back already.
        if conn.in_transaction:
            conn.execute("ROLLBACK")
        conn.commit_hooks = []
        undone, conn.rollback_hooks = conn.rollback_hooks, []
        for callback in undone:
            callback()


def _begin_without_waiting(conn: Connection) -> None:
    """BEGIN IMMEDIATE with no busy timeout: SQLITE_BUSY at once when a
    writer that does not take the file lock (a checkpoint, a backup) is at
    work. Once begun, a WAL writer waits on nothing else."""
    conn.execute("PRAGMA busy_timeout = 0")
    try:
        conn.execute("BEGIN IMMEDIATE")
    except sqlite3.OperationalError as exc:
        if getattr(exc, "sqlite_errorcode", None) == sqlite3.SQLITE_BUSY:
            raise WriteLockBusy() from exc
        raise
    finally:
        conn.execute(f"PRAGMA busy_timeout = {BUSY_TIMEOUT_MS}")


def _translated(conn: Connection, exc: BaseException) -> BaseException:
    """STORAGE_FULL for a full disk's SQLite error, else the error itself."""
    if isinstance(exc, sqlite3.Error) and disk.is_full_sqlite_error(
            exc, getattr(conn, "db_path", None)):
        return disk.storage_full()
    return exc


def checkpoint_passive(conn: sqlite3.Connection) -> None:
    """Copy what the WAL holds into the database as far as readers allow,
    without waiting for anyone (and without the write lock)."""
    conn.execute("PRAGMA wal_checkpoint(PASSIVE)").fetchall()


def checkpoint(conn: sqlite3.Connection) -> None:
    """Truncate the WAL; readers holding old snapshots would otherwise let it grow."""
    conn.execute("PRAGMA wal_checkpoint(TRUNCATE)")
