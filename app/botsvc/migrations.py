"""The migration runner: plain SQL files applied once, in order, by name.

The files are ``migrations/NNNN_name.sql`` at the top of the repository;
the build ships them inside the package (``botsvc/sql_migrations/``, setup.py),
where an installed botsvc finds them. Each
carries its own ``BEGIN ... COMMIT`` (``executescript`` commits any open
transaction first, so a file cannot share one with the runner) and sets
``PRAGMA user_version`` to its number inside it.
"""
from __future__ import annotations

import fcntl
import logging
import os
import re
import sqlite3

from botsvc import clock
from botsvc.db import connect, transaction

log = logging.getLogger(__name__)

PACKAGED_DIR = os.path.join(os.path.dirname(__file__), "sql_migrations")   # a wheel
# A checkout: app/botsvc/migrations.py, three folders below the top.
CHECKOUT_DIR = os.path.join(os.path.dirname(os.path.dirname(os.path.dirname(__file__))), "migrations")
MIGRATIONS_DIR = PACKAGED_DIR if os.path.isdir(PACKAGED_DIR) else CHECKOUT_DIR

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


def applied_names(conn: sqlite3.Connection) -> set[str]:
    """The migrations recorded as applied to this database, by file name."""
    return {row[0] for row in conn.execute("SELECT name FROM schema_migrations")}


def is_current(conn: sqlite3.Connection, directory: str = MIGRATIONS_DIR) -> bool:
    """Whether every migration this code has is applied (the readiness
    check's schema_outdated)."""
    known = {os.path.basename(path) for _, path in migration_files(directory)}
    return known <= applied_names(conn)


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
        applied = applied_names(conn)
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
    """When a migration ran: the machine's time (the service clock's offset
    is itself kept in the database being migrated)."""
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
