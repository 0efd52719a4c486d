"""``transaction``: the one way to write (see its docstring), and what a
write that must not wait raises when another writer is at work."""
from __future__ import annotations

import sqlite3

from botsvc import commits, disk
from botsvc.db.connection import BUSY_TIMEOUT_MS, Connection


class WriteLockBusy(Exception):
    """``transaction(conn, wait=False)`` found another writer at work."""


class WrittenBeforeTheBody(RuntimeError):
    """A request wrote before it read its body (app/botsvc/write_guard.py):
    a parked request would write it twice. A bug: a 500 in every test."""


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
            if conn.writes_held:
                raise WrittenBeforeTheBody("a write began before the request's body was read")
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
        commits.committed()   # an operator call waiting for what this wrote reads again

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
