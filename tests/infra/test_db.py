"""SQLite: pragmas, BEGIN IMMEDIATE, migrations exactly once, nothing at
import time: what lets several worker processes share one database file."""
from __future__ import annotations

import multiprocessing
import os
import sqlite3
import subprocess
import sys

import pytest

from botsvc.db import BUSY_TIMEOUT_MS, WriteLockBusy, connect, transaction
from botsvc.devkit.paths import REPO
from botsvc.migrations import migrate, migration_files

ROOT = str(REPO)


def _latest_version() -> int:
    return max(number for number, _ in migration_files())


def test_connection_pragmas(tmp_path):
    path = str(tmp_path / "db.sqlite3")
    migrate(path)
    for _ in range(2):  # every new connection, not just the first
        conn = connect(path)
        assert conn.execute("PRAGMA journal_mode").fetchone()[0] == "wal"
        assert conn.execute("PRAGMA foreign_keys").fetchone()[0] == 1
        assert conn.execute("PRAGMA busy_timeout").fetchone()[0] == BUSY_TIMEOUT_MS >= 1000
        assert conn.isolation_level is None  # autocommit: we write BEGIN ourselves
        conn.close()


def test_foreign_keys_are_enforced(tmp_path):
    path = str(tmp_path / "db.sqlite3")
    migrate(path)
    conn = connect(path)
    with pytest.raises(sqlite3.IntegrityError):
        with transaction(conn):
            conn.execute("INSERT INTO chats (chat_id, bot_id, user_id, status, started_at)"
                         " VALUES ('vc_x', 424242, 424242, 'active', 0)")
    assert conn.execute("SELECT COUNT(*) FROM chats").fetchone()[0] == 0


def test_transaction_takes_the_write_lock_at_begin(tmp_path):
    path = str(tmp_path / "db.sqlite3")
    migrate(path)
    first, second = connect(path), connect(path)
    second.execute("PRAGMA busy_timeout = 0")
    with transaction(first):
        first.execute("SELECT COUNT(*) FROM bots").fetchone()  # a read only, so far
        with pytest.raises(sqlite3.OperationalError, match="locked"):
            second.execute("BEGIN IMMEDIATE")
    second.execute("BEGIN IMMEDIATE")
    second.execute("ROLLBACK")


def test_a_transaction_that_must_not_wait_refuses_a_busy_database_at_once(tmp_path):
    """wait=False (the call log's writes): another writer holding the file
    lock, or SQLite's own lock without it (a checkpoint, a backup), is
    WriteLockBusy at once; the busy timeout is back afterwards and nothing
    was written. (No timing asserted: a waiting call would never return.)"""
    path = str(tmp_path / "db.sqlite3")
    migrate(path)
    conn, holder = connect(path), connect(path)
    users = "SELECT COUNT(*) FROM users"
    with transaction(holder):                      # the file lock, then BEGIN IMMEDIATE
        with pytest.raises(WriteLockBusy), transaction(conn, wait=False):
            conn.execute("INSERT INTO users (created_at) VALUES (1)")
    plain = sqlite3.connect(path, isolation_level=None)
    plain.execute("BEGIN IMMEDIATE")                # SQLite's lock alone
    try:
        with pytest.raises(WriteLockBusy), transaction(conn, wait=False):
            conn.execute("INSERT INTO users (created_at) VALUES (2)")
    finally:
        plain.execute("ROLLBACK")
        plain.close()
    assert conn.execute("PRAGMA busy_timeout").fetchone()[0] == BUSY_TIMEOUT_MS
    assert not conn.in_transaction and conn.execute(users).fetchone()[0] == 0
    with transaction(conn, wait=False):            # free: it writes
        conn.execute("INSERT INTO users (created_at) VALUES (3)")
    assert conn.execute(users).fetchone()[0] == 1
    probe = connect(path)
    assert probe.try_acquire_write_lock()          # and it left the file lock free
    probe.release_write_lock()
    for opened in (probe, conn, holder):
        opened.close()


def test_transaction_commits_rolls_back_and_nests(tmp_path):
    path = str(tmp_path / "db.sqlite3")
    migrate(path)
    conn = connect(path)
    count = "SELECT COUNT(*) FROM users"
    with transaction(conn):
        conn.execute("INSERT INTO users (created_at) VALUES (1)")
        with pytest.raises(ValueError):
            with transaction(conn):  # a savepoint
                conn.execute("INSERT INTO users (created_at) VALUES (2)")
                raise ValueError
        assert conn.execute(count).fetchone()[0] == 1
    assert not conn.in_transaction and conn.execute(count).fetchone()[0] == 1
    with pytest.raises(RuntimeError):
        with transaction(conn):
            conn.execute("INSERT INTO users (created_at) VALUES (3)")
            raise RuntimeError
    assert not conn.in_transaction and conn.execute(count).fetchone()[0] == 1


def test_after_commit_runs_only_after_commit(tmp_path):
    path = str(tmp_path / "db.sqlite3")
    migrate(path)
    conn = connect(path)
    calls = []
    with transaction(conn):
        conn.after_commit(lambda: calls.append("committed"))
        assert calls == []
    assert calls == ["committed"]
    with pytest.raises(KeyError):
        with transaction(conn):
            conn.after_commit(lambda: calls.append("rolled back"))
            raise KeyError
    with transaction(conn):
        pass
    assert calls == ["committed"]
    conn.after_commit(lambda: calls.append("now"))
    assert calls == ["committed", "now"]


def test_migrate_creates_the_schema_once(tmp_path):
    path = str(tmp_path / "new" / "db.sqlite3")
    assert migrate(path) == _latest_version()
    assert migrate(path) == _latest_version()
    conn = connect(path)
    assert conn.execute("PRAGMA user_version").fetchone()[0] == _latest_version()
    assert conn.execute("SELECT COUNT(*) FROM platform").fetchone()[0] == 1


COUNTING_MIGRATION = """BEGIN;
CREATE TABLE applied (n INTEGER NOT NULL);
INSERT INTO applied (n) VALUES (1);
-- slow enough that unsynchronised migrators would overlap
CREATE TABLE filler AS WITH RECURSIVE c(x) AS (SELECT 1 UNION ALL SELECT x + 1 FROM c
    LIMIT 300000) SELECT x FROM c;
PRAGMA user_version = 1;
COMMIT;
"""
SECOND_MIGRATION = """BEGIN;
INSERT INTO applied (n) VALUES (2);
CREATE TABLE second (x INTEGER);
PRAGMA user_version = 2;
COMMIT;
"""


def _migrate_after(barrier, path, directory, queue):
    try:
        barrier.wait(30)
        queue.put(("ok", migrate(path, directory) if directory else migrate(path)))
    except BaseException as exc:  # reported to the parent
        queue.put(("error", repr(exc)))


@pytest.mark.parametrize("custom", [True, False])
def test_concurrent_processes_migrate_exactly_once(tmp_path, custom):
    directory = None
    if custom:
        directory = tmp_path / "migrations"
        directory.mkdir()
        (directory / "0001_counting.sql").write_text(COUNTING_MIGRATION)
        (directory / "0002_second.sql").write_text(SECOND_MIGRATION)
        directory = str(directory)
    path = str(tmp_path / "shared" / "db.sqlite3")
    ctx = multiprocessing.get_context("spawn")
    barrier, queue = ctx.Barrier(4), ctx.Queue()
    procs = [ctx.Process(target=_migrate_after, args=(barrier, path, directory, queue))
             for _ in range(4)]
    for proc in procs:
        proc.start()
    results = [queue.get(timeout=60) for _ in procs]
    for proc in procs:
        proc.join(30)
    expected = 2 if custom else _latest_version()
    assert results == [("ok", expected)] * 4
    conn = connect(path)
    assert conn.execute("PRAGMA user_version").fetchone()[0] == expected
    assert conn.execute("PRAGMA journal_mode").fetchone()[0] == "wal"
    if custom:
        assert [r[0] for r in conn.execute("SELECT n FROM applied ORDER BY n")] == [1, 2]


def test_failing_migration_leaves_no_partial_schema(tmp_path):
    directory = tmp_path / "migrations"
    directory.mkdir()
    (directory / "0001_counting.sql").write_text(COUNTING_MIGRATION)
    (directory / "0002_broken.sql").write_text(
        "BEGIN;\nCREATE TABLE half (x INTEGER);\nINSERT INTO applied (n) VALUES (2);\n"
        "INSERT INTO no_such_table VALUES (1);\nPRAGMA user_version = 2;\nCOMMIT;\n")
    path = str(tmp_path / "db.sqlite3")
    with pytest.raises(sqlite3.OperationalError):
        migrate(path, str(directory))
    conn = connect(path)
    assert conn.execute("PRAGMA user_version").fetchone()[0] == 1
    tables = {r[0] for r in conn.execute("SELECT name FROM sqlite_master WHERE type='table'")}
    assert "half" not in tables and "applied" in tables
    assert [r[0] for r in conn.execute("SELECT n FROM applied")] == [1]
    assert not conn.in_transaction
    conn.close()
    # once fixed, the migration applies and the earlier one is not run again
    (directory / "0002_broken.sql").write_text(SECOND_MIGRATION)
    assert migrate(path, str(directory)) == 2
    conn = connect(path)
    assert [r[0] for r in conn.execute("SELECT n FROM applied ORDER BY n")] == [1, 2]


def test_migration_must_bump_user_version(tmp_path):
    directory = tmp_path / "migrations"
    directory.mkdir()
    (directory / "0001_lazy.sql").write_text("BEGIN;\nCREATE TABLE t (x);\nCOMMIT;\n")
    path = str(tmp_path / "db.sqlite3")
    with pytest.raises(RuntimeError):
        migrate(path, str(directory))
    conn = connect(path)
    assert conn.execute("SELECT COUNT(*) FROM sqlite_master WHERE name = 't'").fetchone()[0] == 0


def test_two_migrations_with_one_number_are_refused(tmp_path):
    directory = tmp_path / "migrations"
    directory.mkdir()
    (directory / "0001_a.sql").write_text(COUNTING_MIGRATION)
    (directory / "0001_b.sql").write_text(COUNTING_MIGRATION)
    with pytest.raises(RuntimeError):
        migrate(str(tmp_path / "db.sqlite3"), str(directory))


def test_project_migrations_are_numbered_and_transactional():
    files = migration_files()
    numbers = [n for n, _ in files]
    # Numbers are reserved per branch (TEAM.md: 0006 to 0011), so a higher one
    # may land before a lower one: ascending from 1, none used twice.
    assert numbers[0] == 1 and numbers == sorted(set(numbers))
    for number, path in files:
        text = open(path, encoding="utf-8").read()
        assert text.lstrip().startswith(("BEGIN", "--"))
        assert f"PRAGMA user_version = {number};" in text
        assert text.rstrip().endswith("COMMIT;")


def test_importing_the_package_opens_no_database(tmp_path):
    data_dir = tmp_path / "data"
    workdir = tmp_path / "cwd"
    workdir.mkdir()
    code = ("import botsvc, botsvc.api, botsvc.manage, botsvc.cli, botsvc.jobs, botsvc.jobs.schedule, "
            "botsvc.gunicorn_conf, botsvc.db, botsvc.domain.chats; print('imported')")
    env = {**os.environ, "BOTSVC_DATA_DIR": str(data_dir), "PYTHONPATH": ROOT}
    done = subprocess.run([sys.executable, "-c", code], cwd=workdir, env=env,
                          capture_output=True, text=True, timeout=60)
    assert done.returncode == 0 and "imported" in done.stdout, done.stderr
    assert not data_dir.exists()
    assert list(workdir.iterdir()) == []


def test_gunicorn_does_not_preload_the_app():
    from botsvc import gunicorn_conf
    assert gunicorn_conf.preload_app is False
    assert gunicorn_conf.workers == int(os.environ.get("BOTSVC_WORKERS", "2"))


def test_create_app_migrates_and_keeps_a_secret(tmp_path):
    from botsvc.config import Settings
    from botsvc.factory import create_app
    data_dir = tmp_path / "fresh"
    create_app(Settings.from_env({"BOTSVC_DATA_DIR": str(data_dir)}))
    conn = connect(str(data_dir / "botsvc.sqlite3"))
    assert conn.execute("PRAGMA user_version").fetchone()[0] == _latest_version()
    secret = data_dir / "secret_key"
    assert secret.exists() and oct(secret.stat().st_mode & 0o777) == "0o600"
    key = secret.read_bytes()
    assert Settings.from_env({"BOTSVC_DATA_DIR": str(data_dir)}).secret_key == key
