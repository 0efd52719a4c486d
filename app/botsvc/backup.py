"""``botsvc backup DEST`` and ``botsvc restore SRC``: a
consistent copy of a running installation, and an empty data dir filled from
one.

Why the copy is consistent while the service writes: the database is copied
first with ``VACUUM INTO``, one read transaction, so it is a snapshot that
never blocks a writer (WAL). The stored files are copied next, exactly those
the snapshot's ``files`` rows name. A stored file never changes once its row
exists (uploads land in storage before their row is inserted), so every file
the snapshot refers to is there to copy; files of uploads newer than the
snapshot are simply not in the backup, like their rows. Only ``reset`` removes
stored files; one that vanishes mid-backup fails the backup.

What is checked: SQLite's ``integrity_check`` of the copied database, and each
copied file's size and SHA-256 (re-read from the copy) against its row. The
signing key in use goes along (from the data dir, or BOTSVC_SECRET_KEY), so
signed download URLs and tokens keep working after a restore.

A backup directory holds ``botsvc.sqlite3``, ``files/``, ``secret_key`` and
``backup.json`` (what was copied, for ``restore`` to check).

``restore_replica`` fills an empty data dir from Litestream's continuous
replica instead (app/botsvc/replication.py): the database only; the stored
files and the signing key come by the operator's own copy (docs/production.md).
"""
from __future__ import annotations

import contextlib
import hashlib
import json
import os
import shutil
import sqlite3
import time
from collections.abc import Callable
from dataclasses import dataclass

from botsvc import clock, disk, replication
from botsvc.config import DATABASE_FILE, Settings
from botsvc.domain.files import STORAGE_NAME, files_dir, storage_path

SECRET_KEY = "secret_key"
MANIFEST = "backup.json"
FORMAT = 1
CHUNK = 1 << 20
PROGRESS_EVERY_SECONDS = 1.0


class BackupError(Exception):
    """Why a backup or restore stopped; its message is one line for the operator."""


@dataclass
class Summary:
    schema_version: int
    database_bytes: int
    files: int
    file_bytes: int
    seconds: float

    def line(self, verb: str, where: str) -> str:
        return (f"{verb} {where}: database {_size(self.database_bytes)} (schema "
                f"{self.schema_version}, integrity ok), {self.files} stored files "
                f"{_size(self.file_bytes)} (SHA-256 verified), signing key;"
                f" {self.seconds:.1f} s")


class Progress:
    """A line on stderr at most once a second, so long work shows it moves."""

    def __init__(self, say: Callable[[str], None]):
        self.say, self.last = say, time.monotonic()

    def __call__(self, text: str, force: bool = False) -> None:
        if force or time.monotonic() - self.last >= PROGRESS_EVERY_SECONDS:
            self.last = time.monotonic()
            self.say(text)


def _size(n: int) -> str:
    return f"{n / (1024 * 1024):.1f} MiB"


def backup(settings: Settings, dest: str, say: Callable[[str], None]) -> Summary:
    started, progress = time.monotonic(), Progress(say)
    source = settings.db_path
    if not os.path.isfile(source):
        raise BackupError(f"no installation to back up: {source} does not exist")
    dest = os.path.abspath(dest)
    if os.path.exists(dest) and (not os.path.isdir(dest) or os.listdir(dest)):
        raise BackupError(f"{dest} already exists and is not an empty directory")
    created = not os.path.exists(dest)
    os.makedirs(os.path.join(dest, "files"), mode=0o700, exist_ok=True)
    os.chmod(dest, 0o700)
    try:
        return _backup_into(settings, dest, progress, started)
    except BaseException:
        _empty(dest, remove=created)   # never leave half a backup that looks whole
        raise


def _backup_into(settings: Settings, dest: str, progress: Progress, started: float) -> Summary:
    source = settings.db_path
    progress(f"copying the database ({_size(os.path.getsize(source))})", force=True)
    copy = os.path.join(dest, DATABASE_FILE)
    with contextlib.closing(sqlite3.connect(source, timeout=15)) as live:
        live.execute("VACUUM INTO ?", (copy,))   # one read transaction: a snapshot
    os.chmod(copy, 0o600)
    _fsync(copy)
    schema, rows = _check_database(copy)
    files, total = _copy_files(rows, settings.data_dir, dest, progress)
    _write_private(os.path.join(dest, SECRET_KEY), settings.secret_key)
    manifest = {"format": FORMAT, "created_at": int(clock.machine_time()),
                "schema_version": schema, "database_bytes": os.path.getsize(copy),
                "files": files, "file_bytes": total}
    _write_private(os.path.join(dest, MANIFEST), json.dumps(manifest, indent=2).encode())
    _fsync(os.path.join(dest, "files"))
    _fsync(dest)
    return Summary(schema, manifest["database_bytes"], files, total,
                   time.monotonic() - started)


def restore(settings: Settings, src: str, say: Callable[[str], None]) -> Summary:
    """Fill the (empty or missing) data dir from the backup ``src``. On any
    failure what was written is removed again, leaving the data dir empty."""
    started, progress = time.monotonic(), Progress(say)
    src = os.path.abspath(src)
    manifest = _read_manifest(src)
    data_dir = settings.data_dir
    # The full-disk reserve a start leaves (app/botsvc/disk.py) holds no data.
    if os.path.exists(data_dir) and (not os.path.isdir(data_dir)
                                     or set(os.listdir(data_dir)) - {disk.RESERVE_NAME}):
        raise BackupError(f"the data dir {data_dir} is not empty; restore fills an empty one")
    created = not os.path.exists(data_dir)
    os.makedirs(data_dir, mode=0o700, exist_ok=True)
    try:
        progress(f"copying the database ({_size(manifest['database_bytes'])})", force=True)
        target = settings.db_path
        shutil.copyfile(os.path.join(src, DATABASE_FILE), target)
        os.chmod(target, 0o600)
        _fsync(target)
        schema, rows = _check_database(target)
        files, total = _copy_files(rows, src, data_dir, progress)
        if (files, total) != (manifest["files"], manifest["file_bytes"]):
            raise BackupError(f"the backup lists {manifest['files']} files, its database"
                              f" {files}: it is incomplete")
        with open(os.path.join(src, SECRET_KEY), "rb") as fh:
            _write_private(os.path.join(data_dir, SECRET_KEY), fh.read())
        _fsync(files_dir(data_dir))
        _fsync(data_dir)
    except BaseException:
        _empty(data_dir, remove=created)
        raise
    return Summary(schema, os.path.getsize(target), files, total, time.monotonic() - started)


@dataclass
class ReplicaSummary:
    schema_version: int
    database_bytes: int
    restored: replication.Restored
    files: int
    files_missing: int
    seconds: float

    def line(self, url: str, data_dir: str) -> str:
        missing = (f", {self.files_missing} missing (FILE_NOT_FOUND until their bytes are"
                   " copied into files/)" if self.files_missing else "")
        return (f"restored {replication.shown(url)} into {data_dir}: database"
                f" {_size(self.database_bytes)} (schema {self.schema_version}, integrity ok) up to"
                f" transaction {self.restored.txid}, replicated at {self.restored.synced_at};"
                f" stored files: {self.files} named, {self.files - self.files_missing} present"
                f"{missing}; {self.seconds:.1f} s")


# What the operator's copy of the stored files and the signing key brings
# into the data dir before a restore from the replica (and the reserve).
BROUGHT_ALONG = {"files", SECRET_KEY, disk.RESERVE_NAME}


def restore_replica(settings: Settings, url: str, say: Callable[[str], None]) -> ReplicaSummary:
    """The database of the data dir (empty, or holding only stored files and
    the signing key) restored from the replica at ``url``, then checked. On
    any failure the database is removed again, whatever else was there stays."""
    started, data_dir = time.monotonic(), settings.data_dir
    if os.path.exists(data_dir) and (not os.path.isdir(data_dir)
                                     or set(os.listdir(data_dir)) - BROUGHT_ALONG):
        raise BackupError(f"the data dir {data_dir} holds more than stored files and the"
                          " signing key; a restore fills an empty one")
    os.makedirs(data_dir, mode=0o700, exist_ok=True)
    target = settings.db_path
    say(f"restoring the database from {replication.shown(url)}")
    try:
        restored = replication.restore(url, target)
        os.chmod(target, 0o600)
        schema, rows = _check_database(target)
    except BaseException:
        for leftover in (target, target + "-wal", target + "-shm"):
            with contextlib.suppress(OSError):
                os.unlink(leftover)
        raise
    missing = sum(1 for name, _, _ in rows if not STORAGE_NAME.match(name)
                  or not os.path.isfile(os.path.join(files_dir(data_dir), name)))
    return ReplicaSummary(schema, os.path.getsize(target), restored, len(rows), missing,
                          time.monotonic() - started)


def _read_manifest(src: str) -> dict:
    try:
        with open(os.path.join(src, MANIFEST), encoding="utf-8") as fh:
            manifest = json.load(fh)
    except (OSError, ValueError):
        raise BackupError(f"{src} is not a botsvc backup (no readable {MANIFEST})") from None
    if manifest.get("format") != FORMAT:
        raise BackupError(f"{src} is a backup in a format this botsvc does not know")
    for name in (DATABASE_FILE, SECRET_KEY):
        if not os.path.isfile(os.path.join(src, name)):
            raise BackupError(f"{src} is incomplete: {name} is missing")
    return manifest


def _check_database(path: str) -> tuple[int, list[tuple[str, int, str]]]:
    """integrity_check, the schema version, and the stored files the copy names."""
    with contextlib.closing(sqlite3.connect(path)) as conn:
        verdict = [row[0] for row in conn.execute("PRAGMA integrity_check")]
        if verdict != ["ok"]:
            raise BackupError(f"the database copy {path} fails integrity_check: {verdict[0]}")
        schema = conn.execute("PRAGMA user_version").fetchone()[0]
        rows = conn.execute("SELECT storage_name, file_size, sha256 FROM files"
                            " ORDER BY storage_name").fetchall()
    return schema, rows


def _copy_files(rows, from_dir: str, to_dir: str, progress: Progress) -> tuple[int, int]:
    """Copy each stored file, then re-read the copy and check its size and
    SHA-256 against the row."""
    os.makedirs(files_dir(to_dir), mode=0o700, exist_ok=True)
    done = total = 0
    for storage_name, size, sha256 in rows:
        if not STORAGE_NAME.match(storage_name):   # a row never names a path
            raise BackupError(f"a files row holds a bad storage name {storage_name!r}")
        source, target = storage_path(from_dir, storage_name), storage_path(to_dir, storage_name)
        try:
            shutil.copyfile(source, target)
        except FileNotFoundError:
            raise BackupError(f"stored file {storage_name} vanished while copying (a reset"
                              " during the backup?); run it again") from None
        os.chmod(target, 0o600)
        _fsync(target)
        if _sha256(target) != (size, sha256):
            raise BackupError(f"stored file {storage_name} does not match its SHA-256")
        done, total = done + 1, total + size
        progress(f"stored files: {done}/{len(rows)} ({_size(total)})")
    return done, total


def _sha256(path: str) -> tuple[int, str]:
    digest, size = hashlib.sha256(), 0
    with open(path, "rb") as fh:
        for chunk in iter(lambda: fh.read(CHUNK), b""):
            digest.update(chunk)
            size += len(chunk)
    return size, digest.hexdigest()


def _fsync(path: str) -> None:
    """Durable before the summary says so (a directory: its entries)."""
    fd = os.open(path, os.O_RDONLY)
    try:
        os.fsync(fd)
    finally:
        os.close(fd)


def _write_private(path: str, data: bytes) -> None:
    fd = os.open(path, os.O_WRONLY | os.O_CREAT | os.O_EXCL, 0o600)
    with os.fdopen(fd, "wb") as fh:
        fh.write(data)
        fh.flush()
        os.fsync(fh.fileno())


def _empty(data_dir: str, remove: bool) -> None:
    for name in set(os.listdir(data_dir)) - {disk.RESERVE_NAME}:
        path = os.path.join(data_dir, name)
        if os.path.isdir(path) and not os.path.islink(path):
            shutil.rmtree(path, ignore_errors=True)
        else:
            with contextlib.suppress(OSError):
                os.unlink(path)
    if remove:
        with contextlib.suppress(OSError):
            os.rmdir(data_dir)
