"""Files: the table of clean uploads, their stored bytes and the per-bot quota.

A file row exists only for a file that passed the whole media pipeline, and
it belongs to one bot: every lookup is by (bot, file_id), so another bot's
file_id is exactly as unknown as an invented one. The bytes live under
``<data dir>/files/`` with a random name the server chose; no disk path ever
leaves this module in a response.
"""
from __future__ import annotations

import contextlib
import json
import logging
import os
import re
import secrets
import shutil
import sqlite3
from dataclasses import dataclass

from botsvc import clock, owner
from botsvc.contract import FILE_ID
from botsvc.errors import ApiError, Reason, invalid, media_rejected
from botsvc.media import MediaConfig, ProcessedFile, process_upload

log = logging.getLogger(__name__)

STORAGE_NAME = re.compile(r"^[a-f0-9]{32}\Z")
# What a Message's ``media`` object shows of a file (the contract's shape).
MEDIA_METADATA = ("width", "height", "duration")


def files_dir(data_dir: str) -> str:
    return os.path.join(data_dir, "files")


def storage_path(data_dir: str, storage_name: str) -> str:
    if not STORAGE_NAME.match(storage_name):  # a row is never trusted to name a path
        raise ValueError("not a storage name")
    return os.path.join(files_dir(data_dir), storage_name)


@dataclass
class StoredUpload:
    """A processed upload whose bytes are already in storage but which has no
    row yet: ``record_file`` gives it one, ``discard`` removes the bytes."""
    storage_name: str
    path: str
    processed: ProcessedFile

    @property
    def kind(self) -> str:
        return self.processed.kind


def process_and_store(config: MediaConfig, data_dir: str, src_path: str, file_name: str,
                      declared_mime: str | None, field: str) -> StoredUpload:
    """The whole pipeline for one quarantined file (slow: never call it inside
    a write transaction), its output moved into storage. Raises the
    pipeline's 400 (``parameters.reason``) or 503; nothing is kept then."""
    processed = process_upload(src_path, file_name, declared_mime, config, field)
    return move_into_storage(data_dir, processed)


def move_into_storage(data_dir: str, processed: ProcessedFile) -> StoredUpload:
    """Move the pipeline's output (in the media work dir, same filesystem)
    under a fresh random name. On failure the output is removed."""
    storage_name = secrets.token_hex(16)
    path = storage_path(data_dir, storage_name)
    try:
        os.makedirs(files_dir(data_dir), mode=0o700, exist_ok=True)
        os.replace(processed.path, path)
    except BaseException:
        _unlink(processed.path)
        raise
    return StoredUpload(storage_name, path, processed)


def discard(stored: StoredUpload | None) -> None:
    if stored is not None:
        _unlink(stored.path)


@contextlib.contextmanager
def discarded_on_error(stored: StoredUpload | None):
    """Around the code that records a stored upload: if it fails, its
    transaction rolls the row back and the bytes go too. (A failure of the
    COMMIT itself is covered by ``record_file``'s rollback hook.)"""
    try:
        yield
    except BaseException:
        discard(stored)
        raise


def remove_stored(data_dir: str, storage_names: list[str]) -> None:
    """Remove stored bytes whose rows are gone (after the deleting commit)."""
    for name in storage_names:
        _unlink(storage_path(data_dir, name))


def _unlink(path: str) -> None:
    try:
        os.unlink(path)
    except FileNotFoundError:
        pass


# -- quota -----------------------------------------------------------------------

def used_bytes(conn: sqlite3.Connection, bot_id: int) -> int:
    return conn.execute("SELECT COALESCE(SUM(file_size), 0) FROM files"
                        " WHERE bot_id = ? AND status = 'clean'", (bot_id,)).fetchone()[0]


def quota_exceeded(field: str, quota: int) -> ApiError:
    return media_rejected(field, Reason.QUOTA_EXCEEDED,
                          f"The bot's storage quota of {quota} bytes would be exceeded")


def check_quota_room(conn: sqlite3.Connection, bot_id: int, quota: int, field: str) -> None:
    """Early refusal before any media work: a bot whose storage is already
    full cannot store anything. The binding check is in ``record_file``."""
    if used_bytes(conn, bot_id) >= quota:
        raise quota_exceeded(field, quota)


# -- rows ------------------------------------------------------------------------

def record_file(conn: sqlite3.Connection, bot_id: int, stored: StoredUpload, quota: int,
                field: str) -> sqlite3.Row:
    """Give a stored upload its row, if it fits the bot's quota. Must run in
    the caller's write transaction: the sum and the insert are then one step
    for every process, so two concurrent uploads cannot both slip under it."""
    if not conn.in_transaction:
        raise RuntimeError("record_file needs the caller's write transaction")
    p = stored.processed
    if used_bytes(conn, bot_id) + p.file_size > quota:
        raise quota_exceeded(field, quota)
    # A COMMIT that fails (a full disk) takes the row back: the bytes go too.
    conn.on_rollback(lambda: discard(stored))
    return conn.execute(
        "INSERT INTO files (file_id, bot_id, kind, mime_type, file_name, file_size, sha256,"
        " metadata, storage_name, created_at) VALUES (?, ?, ?, ?, ?, ?, ?, ?, ?, ?)"
        " RETURNING *",
        (secrets.token_hex(24), bot_id, p.kind, p.mime_type, p.file_name, p.file_size,
         p.sha256, json.dumps(p.metadata, sort_keys=True), stored.storage_name, clock.now())
    ).fetchone()


def find_clean_file(conn: sqlite3.Connection, bot_id: int | None,
                    file_id: str) -> sqlite3.Row | None:
    """The clean file with this id, of this bot (any bot when ``bot_id`` is None)."""
    if not isinstance(file_id, str) or not FILE_ID.match(file_id):
        return None
    row = conn.execute("SELECT * FROM files WHERE file_id = ? AND status = 'clean'",
                       (file_id,)).fetchone()
    if row is None or (bot_id is not None and row["bot_id"] != bot_id):
        return None
    return row if bytes_present(conn, row) else None


def bytes_present(conn: sqlite3.Connection, row: sqlite3.Row) -> bool:
    """Whether a row's bytes are in storage. They always are, except in a
    database restored from its replica without them (the replica holds the
    database only: docs/production.md): such a file is as unknown as any,
    to download, send or re-send, never a 500. The data dir is the
    database's directory (one stat; a connection with no path is not checked)."""
    db_path = getattr(conn, "db_path", None)
    if db_path is None:
        return True
    return os.path.isfile(storage_path(os.path.dirname(db_path), row["storage_name"]))


def require_clean_file(conn: sqlite3.Connection, bot_id: int, file_id: str,
                       field: str, path: str | None = None) -> sqlite3.Row:
    """A clean file this bot owns; anything else is INVALID_PARAMETER naming
    ``field``, with the same answer for unknown and unowned ids.
    ``path`` names the place inside ``field`` (``media.2.media``)."""
    row = find_clean_file(conn, bot_id, file_id)
    if row is None:
        where = path or field
        raise invalid(field, f"{where} is not a file_id of a clean file of this bot",
                      **({"path": path} if path else {}))
    return row


def render_file(row: sqlite3.Row) -> dict:
    """The File resource: its fields, then its metadata."""
    file = {"file_id": row["file_id"], "kind": row["kind"], "mime_type": row["mime_type"],
            "file_name": row["file_name"], "file_size": row["file_size"],
            "sha256": row["sha256"]}
    for key, value in json.loads(row["metadata"]).items():
        file.setdefault(key, value)
    return file


def media_of(row: sqlite3.Row) -> dict:
    """A Message's ``media`` object for this file."""
    media = {"file_id": row["file_id"], "kind": row["kind"], "mime_type": row["mime_type"],
             "file_size": row["file_size"], "file_name": row["file_name"]}
    metadata = json.loads(row["metadata"])
    media.update({key: metadata[key] for key in MEDIA_METADATA if key in metadata})
    return media


# -- leftovers -------------------------------------------------------------------

# Bytes are moved into storage just before their row is inserted; a crash (or
# a failed COMMIT) in between leaves bytes without a row. An hour is far more
# than that gap, so anything older and unreferenced is a leftover.
UNREFERENCED_GRACE_SECONDS = 3600
# Quarantine and work files live as long as one upload is processed: up to
# 40 minutes of ffmpeg for 30 minutes of media, plus the scans. Their names
# carry the process that made them: those of a dead process go at once, the
# rest (a live process's, or one this process cannot see) after this grace.
WORK_GRACE_SECONDS = 6 * 3600


def _age(path: str, at: float) -> float:
    try:
        st = os.lstat(path)
    except FileNotFoundError:
        return 0.0  # gone meanwhile: nothing to do
    return at - max(st.st_mtime, st.st_ctime)  # a rename sets ctime


def sweep_leftovers(conn: sqlite3.Connection, data_dir: str, work_dir: str,
                    quarantine_dir: str, at: float | None = None) -> int:
    """Remove stored bytes that no row references, and quarantine and work
    files a crashed process left behind (at once when the process that made
    them is known to be dead). Returns how many entries went."""
    at = clock.machine_time() if at is None else at  # file mtimes are the machine's
    removed = 0
    directory = files_dir(data_dir)
    names = [n for n in _listdir(directory) if STORAGE_NAME.match(n)
             and _age(os.path.join(directory, n), at) > UNREFERENCED_GRACE_SECONDS]
    for start in range(0, len(names), 500):
        batch = names[start:start + 500]
        marks = ",".join("?" * len(batch))
        known = {row[0] for row in conn.execute(
            f"SELECT storage_name FROM files WHERE storage_name IN ({marks})", batch)}
        for name in batch:
            if name not in known:
                _unlink(os.path.join(directory, name))
                removed += 1
    for directory in (work_dir, quarantine_dir):
        for name in _listdir(directory):
            path = os.path.join(directory, name)
            dead = owner.is_alive(owner.owner_of(name)) is False
            if not dead and _age(path, at) <= WORK_GRACE_SECONDS:
                continue
            if os.path.isdir(path) and not os.path.islink(path):
                shutil.rmtree(path, ignore_errors=True)
            else:
                _unlink(path)
            removed += 1
    if removed:
        log.info("removed %d leftover upload files", removed)
    return removed


def _listdir(directory: str) -> list[str]:
    try:
        return os.listdir(directory)
    except FileNotFoundError:
        return []
