"""Migrations recorded by name (issue 13 point 10): every applied file is
recorded, one that arrives late (a lower number than one applied) still runs,
a database from before the records is taken at its user_version, and a
database migrated by newer code is refused with one line, by the CLI and by
the server alike."""
from __future__ import annotations

import os
import sqlite3
import subprocess
import sys
from pathlib import Path

import pytest

from botsvc.db import connect
from botsvc.devkit.paths import REPO
from botsvc.migrations import DatabaseNewerThanCode, migrate, migration_files
from botsvc.testkit.server import free_port

ROOT = str(REPO)


def _names(path) -> list[str]:
    conn = connect(str(path))
    try:
        return [row[0] for row in conn.execute("SELECT name FROM schema_migrations ORDER BY name")]
    finally:
        conn.close()


def _version(path) -> int:
    conn = sqlite3.connect(str(path))
    try:
        return conn.execute("PRAGMA user_version").fetchone()[0]
    finally:
        conn.close()


def _migration(directory: Path, number: int, name: str, body: str) -> None:
    (directory / f"{number:04d}_{name}.sql").write_text(
        f"BEGIN;\n{body}\nPRAGMA user_version = {number};\nCOMMIT;\n")


def _ran(path) -> list[int]:
    conn = sqlite3.connect(str(path))
    try:
        return [row[0] for row in conn.execute("SELECT n FROM ran ORDER BY rowid")]
    finally:
        conn.close()


@pytest.fixture
def directory(tmp_path) -> Path:
    found = tmp_path / "migrations"
    found.mkdir()
    _migration(found, 1, "first", "CREATE TABLE ran (n INTEGER NOT NULL);\n"
                                  "INSERT INTO ran (n) VALUES (1);")
    return found


def test_every_applied_migration_is_recorded_by_name(tmp_path):
    path = tmp_path / "db.sqlite3"
    latest = max(number for number, _ in migration_files())
    assert migrate(str(path)) == latest
    assert _names(path) == [os.path.basename(p) for _, p in migration_files()]
    assert migrate(str(path)) == latest  # nothing applied twice


def test_a_migration_that_arrives_late_is_applied(tmp_path, directory):
    path = tmp_path / "db.sqlite3"
    _migration(directory, 3, "third", "INSERT INTO ran (n) VALUES (3);")
    assert migrate(str(path), str(directory)) == 3
    # Branches merged in another order: 0002 appears after 0003 was applied.
    _migration(directory, 2, "second", "INSERT INTO ran (n) VALUES (2);")
    assert migrate(str(path), str(directory)) == 3
    assert _ran(path) == [1, 3, 2]
    assert _names(path) == ["0001_first.sql", "0002_second.sql", "0003_third.sql"]
    assert _version(path) == 3  # the highest applied, not the last one's own number


def test_a_failing_late_migration_is_not_recorded(tmp_path, directory):
    path = tmp_path / "db.sqlite3"
    _migration(directory, 3, "third", "INSERT INTO ran (n) VALUES (3);")
    migrate(str(path), str(directory))
    _migration(directory, 2, "broken", "INSERT INTO ran (n) VALUES (2);\nINSERT INTO nowhere VALUES (1);")
    with pytest.raises(sqlite3.OperationalError):
        migrate(str(path), str(directory))
    assert _ran(path) == [1, 3]
    assert "0002_broken.sql" not in _names(path)
    assert _version(path) == 3


def _legacy_database(path, directory, numbers) -> None:
    """A database as the runner before names left it: the files applied as
    they are, user_version the highest number, no record of names."""
    conn = sqlite3.connect(str(path), isolation_level=None)
    for number, file in migration_files(str(directory)):
        if number in numbers:
            conn.executescript(Path(file).read_text())
    conn.close()


def test_a_database_from_before_the_names_is_taken_at_its_user_version(tmp_path):
    path = tmp_path / "db.sqlite3"
    _legacy_database(path, REPO / "migrations", {1, 2, 3, 4, 5})
    assert _version(path) == 5
    latest = max(number for number, _ in migration_files())
    assert migrate(str(path)) == latest  # 0001..0005 are not run again (they would fail)
    assert _names(path) == [os.path.basename(p) for _, p in migration_files()]
    conn = connect(str(path))
    assert conn.execute("SELECT 1 FROM sqlite_master WHERE name = 'messages_by_date'").fetchone()


def test_the_first_named_migration_runs_on_a_legacy_database_past_it(tmp_path, directory):
    # A legacy runner applied 0007 (merged first) and never had 0006, the
    # migration that came with the names: it runs now, 0007 does not run again.
    for number in range(2, 8):
        _migration(directory, number, f"m{number}", f"INSERT INTO ran (n) VALUES ({number});")
    path = tmp_path / "db.sqlite3"
    _legacy_database(path, directory, {1, 2, 3, 4, 5, 7})
    assert migrate(str(path), str(directory)) == 7
    assert _ran(path) == [1, 2, 3, 4, 5, 7, 6]


def test_a_database_newer_than_the_code_is_refused(tmp_path, directory):
    path = tmp_path / "db.sqlite3"
    newer = tmp_path / "newer"
    newer.mkdir()
    for file in directory.iterdir():
        (newer / file.name).write_text(file.read_text())
    _migration(newer, 2, "from_the_future", "INSERT INTO ran (n) VALUES (2);")
    migrate(str(path), str(newer))
    _migration(directory, 3, "third", "INSERT INTO ran (n) VALUES (3);")
    with pytest.raises(DatabaseNewerThanCode) as refused:
        migrate(str(path), str(directory))
    assert "0002_from_the_future.sql" in str(refused.value) and "\n" not in str(refused.value)
    assert _ran(path) == [1, 2]  # nothing of this code was applied


def test_a_legacy_database_past_the_code_is_refused(tmp_path, directory):
    path = tmp_path / "db.sqlite3"
    _legacy_database(path, directory, {1})
    conn = sqlite3.connect(str(path))
    conn.execute("PRAGMA user_version = 9")
    conn.close()
    with pytest.raises(DatabaseNewerThanCode) as refused:
        migrate(str(path), str(directory))
    assert "0002" in str(refused.value) and "0009" in str(refused.value)


def _future_data_dir(tmp_path) -> Path:
    data_dir = tmp_path / "data"
    data_dir.mkdir()
    db = data_dir / "botsvc.sqlite3"
    migrate(str(db))
    conn = sqlite3.connect(str(db))
    with conn:
        conn.execute("INSERT INTO schema_migrations (name, applied_at)"
                     " VALUES ('0999_from_the_future.sql', 0)")
    conn.close()
    return data_dir


def _assert_one_clear_line(stderr: str) -> None:
    assert "Traceback" not in stderr, stderr
    lines = [line for line in stderr.splitlines() if "0999_from_the_future.sql" in line]
    assert lines and all(line.startswith("botsvc: the database ") for line in lines), stderr


def test_the_cli_refuses_a_newer_database_with_one_line(tmp_path):
    env = {**os.environ, "BOTSVC_DATA_DIR": str(_future_data_dir(tmp_path))}
    for command in (["migrate"], ["list-bots"]):
        done = subprocess.run([sys.executable, "-m", "botsvc.cli", *command], cwd=ROOT, env=env,
                              capture_output=True, text=True, timeout=60)
        assert done.returncode == 1
        assert len(done.stderr.strip().splitlines()) == 1
        _assert_one_clear_line(done.stderr)


@pytest.mark.server
@pytest.mark.parametrize("argv", [["scripts/server"],
                                  [".venv/bin/gunicorn", "-c", "app/botsvc/gunicorn_conf.py", "wsgi:app"]])
def test_the_server_refuses_a_newer_database_with_one_line(tmp_path, argv):
    env = {**os.environ, "BOTSVC_DATA_DIR": str(_future_data_dir(tmp_path)),
           "BOTSVC_BIND": f"127.0.0.1:{free_port()}", "BOTSVC_CLAMAV_DB": str(tmp_path / "db")}
    done = subprocess.run(argv, cwd=ROOT, env=env, capture_output=True, text=True, timeout=120,
                          start_new_session=True)
    assert done.returncode != 0  # it stops: no server started, no worker restarted forever
    _assert_one_clear_line(done.stderr)
