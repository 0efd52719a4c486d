"""Liveness and readiness: ``GET /healthz`` and ``GET /readyz``.

Readiness is a list of checks, each a function of the settings and the media
configuration that answers ``"ok"`` or a snake_case reason (never a path, a
version or a secret). A check marked ``essential`` makes the installation not
ready (503 NOT_READY) when it fails; any other failing check only degrades it.
Adding a check is one line in ``CHECKS``.
"""
from __future__ import annotations

import contextlib
import os
import sqlite3
import threading
import time
from collections.abc import Callable
from dataclasses import dataclass

from flask import Blueprint, Response, current_app

from botsvc import disk, migrations
from botsvc.config import Settings
from botsvc.envelope import error_response, json_response, ok_body
from botsvc.errors import ApiError, ErrorCode
from botsvc.media import MediaConfig, probe_tools

OK = "ok"
# Longer than the readiness probe of any orchestrator would wait for its
# answer is pointless: a write lock held this long is an outage.
DATABASE_TIMEOUT_SECONDS = 2.0
MEDIA_CACHE_SECONDS = 60.0

bp = Blueprint("health", __name__)


@dataclass(frozen=True)
class Check:
    name: str
    run: Callable[[Settings, MediaConfig], str]
    essential: bool


def check_database(settings: Settings, _media: MediaConfig) -> str:
    """A write transaction commits, and every migration this code has is applied.

    The files are asked first: SQLite hands a new connection a descriptor
    this process already holds open, so a file that became read-only (a
    read-only mount, the immutable attribute) can still take this write.
    Its own short-lived connection, with a short busy timeout, turns a writer
    stuck on the lock into an answer rather than a hung probe."""
    if not all(os.access(path, os.W_OK) for path in _database_files(settings.db_path)):
        return "read_only"
    try:
        conn = sqlite3.connect(settings.db_path, isolation_level=None,
                               timeout=DATABASE_TIMEOUT_SECONDS)
    except sqlite3.Error:
        return "unavailable"
    try:
        conn.execute("BEGIN IMMEDIATE")
        conn.execute("UPDATE platform SET disabled = disabled WHERE id = 1")
        conn.execute("COMMIT")
        current = migrations.is_current(conn)
    except sqlite3.Error as error:
        return _database_reason(error)
    finally:
        with contextlib.suppress(sqlite3.Error):
            if conn.in_transaction:
                conn.execute("ROLLBACK")
        conn.close()
    return OK if current else "schema_outdated"


def _database_files(db_path: str) -> list[str]:
    """The database, its write-ahead log and the directory they live in."""
    return [db_path, os.path.dirname(db_path),
            *(path for path in (db_path + "-wal", db_path + "-shm") if os.path.exists(path))]


def _database_reason(error: sqlite3.Error) -> str:
    name = getattr(error, "sqlite_errorname", "")
    if name.startswith("SQLITE_READONLY") or name.startswith("SQLITE_PERM"):
        return "read_only"
    if name.startswith("SQLITE_BUSY") or name.startswith("SQLITE_LOCKED"):
        return "locked"
    if name.startswith("SQLITE_FULL"):
        return "disk_full"
    if name.startswith("SQLITE_CORRUPT") or name.startswith("SQLITE_NOTADB"):
        return "corrupt"
    return "unavailable"


_media_results: dict[MediaConfig, tuple[float, str]] = {}
_media_lock = threading.Lock()


def check_media(_settings: Settings, media: MediaConfig) -> str:
    """ffmpeg, ffprobe and the scanner answer (the media package's own probe,
    which start-up checks run too); the answer is kept for at most a minute
    in this process, so probes never queue behind tool runs."""
    with _media_lock:
        cached = _media_results.get(media)
        if cached is not None and time.monotonic() - cached[0] < MEDIA_CACHE_SECONDS:
            return cached[1]
        result = probe_tools(media)
        _media_results[media] = (time.monotonic(), result)
        return result


def forget_media_results() -> None:
    """Drop the cached media answers (tests that change the tools)."""
    with _media_lock:
        _media_results.clear()


def check_disk(settings: Settings, _media: MediaConfig) -> str:
    try:
        free = disk.free_bytes(settings.data_dir)
    except OSError:
        return "unavailable"
    return OK if free >= settings.min_free_bytes else "low_free_space"


CHECKS: list[Check] = [
    Check("database", check_database, essential=True),
    Check("media", check_media, essential=False),
    Check("disk", check_disk, essential=True),
]


def readiness(settings: Settings, media: MediaConfig) -> tuple[str, dict[str, str]]:
    """(``ready``, ``degraded`` or ``not_ready``, each check's answer)."""
    checks = {check.name: check.run(settings, media) for check in CHECKS}
    failed = [check for check in CHECKS if checks[check.name] != OK]
    if any(check.essential for check in failed):
        return "not_ready", checks
    return ("degraded" if failed else "ready"), checks


@bp.get("/healthz")
def healthz() -> Response:
    return json_response(200, ok_body({"status": "alive"}))


@bp.get("/readyz")
def readyz() -> Response:
    status, checks = readiness(current_app.config["SETTINGS"], current_app.config["MEDIA"])
    if status == "not_ready":
        failing = ", ".join(name for name, answer in checks.items() if answer != OK)
        return error_response(ApiError(ErrorCode.NOT_READY, f"Not ready: {failing}",
                                       checks=checks))
    return json_response(200, ok_body({"status": status, "checks": checks}))
