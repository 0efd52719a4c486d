"""SQLite access: connections, the one transaction helper, migrations.

Rules this module enforces (PITFALLS.md, "SQLite under several workers"):
connections are opened in autocommit mode (``isolation_level=None``) and every
write unit starts with ``BEGIN IMMEDIATE``, so a writer waits on the busy
timeout instead of failing at once; per-connection pragmas are set on every
connection; nothing opens the database at import time.
"""
from __future__ import annotations

import contextlib
import fcntl
import logging
import os
import re
import sqlite3
import threading

from flask import current_app, g

from app import disk

log = logging.getLogger(__name__)

MIGRATIONS_DIR = os.path.join(os.path.dirname(os.path.dirname(__file__)), "migrations")
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
    return conn


_thread = threading.local()


def thread_connection(path: str) -> sqlite3.Connection:
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


def get_db() -> sqlite3.Connection:
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


@contextlib.contextmanager
def transaction(conn: sqlite3.Connection, *, wait: bool = True):
    """The one way to write: ``with transaction(conn): ...``.

    The outermost use runs ``BEGIN IMMEDIATE`` ... ``COMMIT`` (rolled back on
    any exception, a failed COMMIT included); a nested use becomes a
    savepoint, so a domain function can be called alone or inside a caller's
    larger unit of work. A full disk (SQLite's "database or disk is full", or
    the "disk I/O error" it becomes where SQLite maps a file) leaves as the
    contract's STORAGE_FULL (app/disk.py), with nothing written.

    ``wait=False`` is for writes that must never make anyone wait (the call
    log, written after a call's answer): when another writer holds the write
    lock, or SQLite's own lock (a checkpoint, a backup), it raises
    WriteLockBusy at once instead of queueing.
    """
    try:
        with _transaction(conn, wait):
            yield conn
    except sqlite3.Error as exc:
        if disk.is_full_sqlite_error(exc, getattr(conn, "db_path", None)):
            raise disk.storage_full() from exc
        raise


@contextlib.contextmanager
def _transaction(conn: sqlite3.Connection, wait: bool = True):
    if conn.in_transaction:
        name = f"sp_{id(object()):x}"
        hooks = _on_rollback.setdefault(id(conn), [])
        registered = len(hooks)
        conn.execute(f"SAVEPOINT {name}")
        try:
            yield conn
        except BaseException:
            conn.execute(f"ROLLBACK TO {name}")
            conn.execute(f"RELEASE {name}")
            undone, hooks[registered:] = hooks[registered:], []
            for callback in undone:   # what this savepoint took back
                callback()
            raise
        conn.execute(f"RELEASE {name}")
        return
    locked = getattr(conn, "acquire_write_lock", None) is not None
    if locked and wait:
        conn.acquire_write_lock()
    elif locked and not conn.try_acquire_write_lock():
        raise WriteLockBusy()
    try:
        if wait:
            conn.execute("BEGIN IMMEDIATE")
        else:
            _begin_without_waiting(conn)
        try:
            yield conn
            conn.execute("COMMIT")
        except BaseException:
            # A COMMIT that failed (a full disk) may leave the transaction
            # open, or SQLite may have rolled it back already.
            if conn.in_transaction:
                conn.execute("ROLLBACK")
            _after_commit.pop(id(conn), None)
            for callback in _on_rollback.pop(id(conn), ()):
                callback()
            raise
    finally:
        if locked:
            conn.release_write_lock()
    _on_rollback.pop(id(conn), None)
    for callback in _after_commit.pop(id(conn), ()):
        callback()


def _begin_without_waiting(conn: sqlite3.Connection) -> None:
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


_after_commit: dict[int, list] = {}
_on_rollback: dict[int, list] = {}


def after_commit(conn: sqlite3.Connection, callback) -> None:
    """Run ``callback`` once the current transaction commits (now, if none is
    open); dropped if it rolls back. For wake-ups that must not race the data
    they announce."""
    if conn.in_transaction:
        _after_commit.setdefault(id(conn), []).append(callback)
    else:
        callback()


def on_rollback(conn: sqlite3.Connection, callback) -> None:
    """Run ``callback`` if what is being written is rolled back (the current
    savepoint, or the outermost transaction, its COMMIT failing included):
    for files written beside rows that then never came to be (a full disk at
    COMMIT must leave no orphan file)."""
    if not conn.in_transaction:
        raise RuntimeError("on_rollback needs an open transaction")
    _on_rollback.setdefault(id(conn), []).append(callback)


# -- migrations ---------------------------------------------------------------

_MIGRATION_NAME = re.compile(r"^(\d{4})_[a-z0-9_]+\.sql$")
_COMMIT = "COMMIT;"
# The first migration that shipped with the table of names. A database from
# before that table is taken to hold 0001..user_version, but never this one:
# no build without the table had it.
_FIRST_RECORDED_BY_NAME = 6


class DatabaseNewerThanCode(Exception):
    """The database records a migration this code does not have: a newer
    botsvc migrated it. Its message is one line for the operator."""


def migration_files(directory: str = MIGRATIONS_DIR) -> list[tuple[int, str]]:
    found = []
    for name in sorted(os.listdir(directory)):
        match = _MIGRATION_NAME.match(name)
        if match:
            found.append((int(match.group(1)), os.path.join(directory, name)))
    numbers = [n for n, _ in found]
    if len(set(numbers)) != len(numbers):
        raise RuntimeError(f"two migrations share a number: {numbers}")
    return found


def migrate(db_path: str, directory: str = MIGRATIONS_DIR) -> int:
    """Apply every migration not applied yet, exactly once, however many
    processes start together; refuse a database migrated by newer code.

    Applied migrations are recorded by name (``schema_migrations``), so one
    that arrives with a lower number than one already applied (branches merged
    in another order) is still applied. An exclusive file lock serialises the
    migrating processes; each file carries its own BEGIN ... COMMIT
    (``executescript`` commits any open transaction first), and its record and
    ``PRAGMA user_version`` (the highest number applied, for tools that read
    it) are written inside that same transaction. Returns ``user_version``.
    """
    os.makedirs(os.path.dirname(os.path.abspath(db_path)), mode=0o700, exist_ok=True)
    with open(db_path + ".migrate-lock", "w") as lock:
        fcntl.flock(lock, fcntl.LOCK_EX)
        conn = connect(db_path)
        try:
            conn.execute("PRAGMA journal_mode = WAL")
            files = [(number, os.path.basename(path), path)
                     for number, path in migration_files(directory)]
            applied = _applied_migrations(conn, db_path, files)
            for number, name, path in files:
                if name in applied:
                    continue
                highest = max([number, *(int(done[:4]) for done in applied)])
                _apply(conn, name, path, number, highest)
                applied.add(name)
                log.info("applied migration %s", name)
            return conn.execute("PRAGMA user_version").fetchone()[0]
        finally:
            conn.close()


def _applied_migrations(conn: sqlite3.Connection, db_path: str,
                        files: list[tuple[int, str, str]]) -> set[str]:
    """The names recorded as applied; a database from before the table of
    names gets it now, holding 0001..user_version."""
    has_table = conn.execute("SELECT 1 FROM sqlite_master WHERE type = 'table'"
                             " AND name = 'schema_migrations'").fetchone()
    if has_table:
        applied = {row[0] for row in conn.execute("SELECT name FROM schema_migrations")}
        unknown = sorted(applied - {name for _, name, _ in files})
    else:
        version = conn.execute("PRAGMA user_version").fetchone()[0]
        by_number = {number: name for number, name, _ in files}
        applied = {by_number[n] for n in by_number
                   if n <= version and n != _FIRST_RECORDED_BY_NAME}
        unknown = [f"{n:04d}" for n in range(1, version + 1) if n not in by_number]
    if unknown:
        raise DatabaseNewerThanCode(
            f"the database {db_path} was migrated by a newer botsvc (migration"
            f" {', '.join(unknown)} is unknown to this version); run that version,"
            f" or restore a backup made with this one")
    if not has_table:
        with transaction(conn):
            conn.execute("CREATE TABLE schema_migrations (name TEXT PRIMARY KEY,"
                         " applied_at INTEGER NOT NULL) WITHOUT ROWID")
            conn.executemany("INSERT INTO schema_migrations (name, applied_at) VALUES (?, ?)",
                             [(name, _applied_at()) for name in sorted(applied)])
    return applied


def _applied_at() -> int:
    """When a migration ran: the machine's time (app.clock imports this
    module, hence the late import)."""
    from app import clock
    return int(clock.machine_time())


def _apply(conn: sqlite3.Connection, name: str, path: str, number: int, highest: int) -> None:
    with open(path, encoding="utf-8") as fh:
        script = fh.read().rstrip()
    if f"PRAGMA user_version = {number}" not in script:
        raise RuntimeError(f"{name} must set PRAGMA user_version = {number}")
    if not script.endswith(_COMMIT):
        raise RuntimeError(f"{name} must end with {_COMMIT}")
    # The record joins the file's own transaction: applied and recorded are one
    # step. ``name`` matched _MIGRATION_NAME, so it is safe as a literal.
    script = (script[:-len(_COMMIT)]
              + f"INSERT INTO schema_migrations (name, applied_at) VALUES ('{name}', {_applied_at()});\n"
              + f"PRAGMA user_version = {highest};\n{_COMMIT}\n")
    try:
        conn.executescript(script)
    except sqlite3.Error:
        if conn.in_transaction:
            conn.execute("ROLLBACK")
        raise


def checkpoint(conn: sqlite3.Connection) -> None:
    """Truncate the WAL; readers holding old snapshots would otherwise let it grow."""
    conn.execute("PRAGMA wal_checkpoint(TRUNCATE)")
