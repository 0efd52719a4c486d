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
import time

from flask import current_app, g

log = logging.getLogger(__name__)

MIGRATIONS_DIR = os.path.join(os.path.dirname(os.path.dirname(__file__)), "migrations")
BUSY_TIMEOUT_MS = 15000


def connect(path: str) -> sqlite3.Connection:
    conn = sqlite3.connect(path, isolation_level=None, timeout=BUSY_TIMEOUT_MS / 1000,
                           check_same_thread=False)
    conn.row_factory = sqlite3.Row
    conn.execute(f"PRAGMA busy_timeout = {BUSY_TIMEOUT_MS}")
    conn.execute("PRAGMA foreign_keys = ON")
    conn.execute("PRAGMA synchronous = NORMAL")
    conn.execute("PRAGMA journal_size_limit = 67108864")
    return conn


def get_db() -> sqlite3.Connection:
    """The request's connection, opened on first use and closed at teardown."""
    if "db" not in g:
        g.db = connect(current_app.config["SETTINGS"].db_path)
    return g.db


def close_db(_exc=None) -> None:
    conn = g.pop("db", None)
    if conn is not None:
        conn.close()


@contextlib.contextmanager
def transaction(conn: sqlite3.Connection):
    """The one way to write: ``with transaction(conn): ...``.

    The outermost use runs ``BEGIN IMMEDIATE`` ... ``COMMIT`` (rolled back on
    any exception); a nested use becomes a savepoint, so a domain function can
    be called alone or inside a caller's larger unit of work.
    """
    if conn.in_transaction:
        name = f"sp_{id(object()):x}"
        conn.execute(f"SAVEPOINT {name}")
        try:
            yield conn
        except BaseException:
            conn.execute(f"ROLLBACK TO {name}")
            conn.execute(f"RELEASE {name}")
            raise
        conn.execute(f"RELEASE {name}")
        return
    conn.execute("BEGIN IMMEDIATE")
    try:
        yield conn
    except BaseException:
        conn.execute("ROLLBACK")
        _after_commit.pop(id(conn), None)
        raise
    conn.execute("COMMIT")
    for callback in _after_commit.pop(id(conn), ()):
        callback()


_after_commit: dict[int, list] = {}


def after_commit(conn: sqlite3.Connection, callback) -> None:
    """Run ``callback`` once the current transaction commits (now, if none is
    open); dropped if it rolls back. For wake-ups that must not race the data
    they announce."""
    if conn.in_transaction:
        _after_commit.setdefault(id(conn), []).append(callback)
    else:
        callback()


def now() -> int:
    return int(time.time())


# -- migrations ---------------------------------------------------------------

_MIGRATION_NAME = re.compile(r"^(\d{4})_[a-z0-9_]+\.sql$")


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
    """Apply pending migrations exactly once, however many processes start together.

    An exclusive file lock serialises the migrating processes; each migration
    file carries its own BEGIN ... COMMIT and bumps ``PRAGMA user_version`` inside
    it (``executescript`` commits any open transaction first, so the file must
    own its transaction). Returns the schema version reached.
    """
    os.makedirs(os.path.dirname(os.path.abspath(db_path)), mode=0o700, exist_ok=True)
    with open(db_path + ".migrate-lock", "w") as lock:
        fcntl.flock(lock, fcntl.LOCK_EX)
        conn = connect(db_path)
        try:
            conn.execute("PRAGMA journal_mode = WAL")
            version = conn.execute("PRAGMA user_version").fetchone()[0]
            for number, path in migration_files(directory):
                if number <= version:
                    continue
                with open(path, encoding="utf-8") as fh:
                    script = fh.read()
                if f"PRAGMA user_version = {number}" not in script:
                    raise RuntimeError(f"{os.path.basename(path)} must set PRAGMA user_version = {number}")
                try:
                    conn.executescript(script)
                except sqlite3.Error:
                    if conn.in_transaction:
                        conn.execute("ROLLBACK")
                    raise
                version = number
                log.info("applied migration %s", os.path.basename(path))
            return version
        finally:
            conn.close()


def checkpoint(conn: sqlite3.Connection) -> None:
    """Truncate the WAL; readers holding old snapshots would otherwise let it grow."""
    conn.execute("PRAGMA wal_checkpoint(TRUNCATE)")
