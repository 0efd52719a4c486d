"""Connections to the database: opened with the pragmas every connection
needs, writers queued on a file lock beside the database, one kept per
thread between requests, the request's own (``get_db``), and the WAL's
checkpoints. Writing goes through app/botsvc/db/transactions.py.
"""
from __future__ import annotations

import fcntl
import os
import sqlite3
import threading

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
    writes_held = False   # a request's, until its body is read (app/botsvc/write_guard.py)

    def __init__(self, *args, **kwargs):
        super().__init__(*args, **kwargs)
        # What the open transaction announces once it commits, and what undoes
        # its side effects (files written beside rows) if it rolls back.
        self.commit_hooks: list = []
        self.rollback_hooks: list = []
        self.savepoints = 0   # open savepoints of the current transaction (app/botsvc/db/transactions.py)

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


def checkpoint_passive(conn: sqlite3.Connection) -> None:
    """Copy what the WAL holds into the database as far as readers allow,
    without waiting for anyone (and without the write lock)."""
    conn.execute("PRAGMA wal_checkpoint(PASSIVE)").fetchall()


def checkpoint(conn: sqlite3.Connection) -> None:
    """Truncate the WAL; readers holding old snapshots would otherwise let it grow."""
    conn.execute("PRAGMA wal_checkpoint(TRUNCATE)")
