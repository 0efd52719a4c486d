"""The disk under the data dir: how much is free, and a full one told apart.

The contract makes a full disk a failure like a missing tool: the request that
cannot write answers 503 STORAGE_FULL, nothing is left half-written, and the
service goes on serving reads and recovers by itself once space is free. This
module is the one place that reads the free space and decides that an error
means "the disk is full"; the transaction helper, the upload pipeline, the
error handler and /readyz ask it.
"""
from __future__ import annotations

import errno
import os
import sqlite3

from botsvc.errors import ApiError, ErrorCode

# Below this much free space a failed write is taken for a full disk. SQLite
# reports a full disk as SQLITE_FULL, but where it cannot extend its
# shared-memory index or a file it maps, as a plain "disk I/O error"; a tool
# (ffmpeg) that ran out of space just fails. At the moment of such a failure
# the disk is at (nearly) zero; a real I/O error on a disk with room stays a
# 500.
NEARLY_FULL_BYTES = 1024 * 1024

_FULL_ERRNOS = (errno.ENOSPC, errno.EDQUOT)
_SQLITE_FULL = 13     # SQLITE_FULL
_SQLITE_IOERR = 10    # SQLITE_IOERR (its extended codes share the low byte)


def free_bytes(path: str) -> int:
    """Bytes an unprivileged writer may still use on the filesystem holding
    ``path`` (its nearest existing ancestor, if it does not exist yet)."""
    path = os.path.abspath(path)
    while not os.path.exists(path):
        parent = os.path.dirname(path)
        if parent == path:
            break
        path = parent
    st = os.statvfs(path)
    return st.f_bavail * st.f_frsize


def nearly_full(path: str) -> bool:
    try:
        return free_bytes(path) < NEARLY_FULL_BYTES
    except OSError:
        return False


def storage_full(description: str = "The server's disk is full; retry later") -> ApiError:
    return ApiError(ErrorCode.STORAGE_FULL, description)


def is_full_oserror(exc: BaseException) -> bool:
    """ENOSPC or EDQUOT, however deep in the chain of causes."""
    seen = set()
    while exc is not None and id(exc) not in seen:
        seen.add(id(exc))
        if isinstance(exc, OSError) and exc.errno in _FULL_ERRNOS:
            return True
        exc = exc.__cause__ or exc.__context__
    return False


def is_full_sqlite_error(exc: BaseException, db_path: str | None) -> bool:
    """SQLITE_FULL; or SQLITE_IOERR while the database's disk is (nearly) full."""
    return _is_full_sqlite(exc, os.path.dirname(db_path) if db_path else None)


def _is_full_sqlite(exc: BaseException, directory: str | None) -> bool:
    if not isinstance(exc, sqlite3.Error):
        return False
    code = getattr(exc, "sqlite_errorcode", None)
    if code is None:     # raised by the sqlite3 module itself, or an older Python
        message = str(exc)
        full = "database or disk is full" in message
        ioerr = "disk I/O error" in message
    else:
        full = code & 0xFF == _SQLITE_FULL
        ioerr = code & 0xFF == _SQLITE_IOERR
    if full:
        return True
    return ioerr and directory is not None and nearly_full(directory)


def is_disk_full(exc: BaseException, data_dir: str | None = None) -> bool:
    """Whether ``exc`` says the disk could not take a write."""
    if isinstance(exc, ApiError):
        return exc.code == ErrorCode.STORAGE_FULL
    if is_full_oserror(exc):
        return True
    return _is_full_sqlite(exc, data_dir)


# -- starting on a full disk ----------------------------------------------------
#
# A WAL database cannot even be opened for reading on a disk with no room:
# the first connection must create its shared-memory index (32 KiB, more for a
# large WAL) beside it, and SQLite answers "disk I/O error". So the data dir
# keeps a small reserve file while there is room; a start that finds the disk
# full removes it, opens the database in the room it leaves, and serves reads.
# The reserve comes back once free space is above BOTSVC_MIN_FREE_BYTES.

RESERVE_NAME = ".disk-reserve"
RESERVE_BYTES = 1024 * 1024


def reserve_path(data_dir: str) -> str:
    return os.path.join(data_dir, RESERVE_NAME)


def keep_reserve(data_dir: str, min_free_bytes: int) -> bool:
    """Create the reserve if it is missing and the disk has room for it and
    more (free space at least ``min_free_bytes``); True when it is there."""
    path = reserve_path(data_dir)
    if os.path.exists(path):
        return True
    if free_bytes(data_dir) < max(min_free_bytes, 2 * RESERVE_BYTES + NEARLY_FULL_BYTES):
        return False
    tmp = f"{path}.{os.getpid()}.tmp"
    try:
        fd = os.open(tmp, os.O_WRONLY | os.O_CREAT | os.O_TRUNC | os.O_CLOEXEC, 0o600)
        try:
            os.posix_fallocate(fd, 0, RESERVE_BYTES)   # real blocks, not a sparse file
        finally:
            os.close(fd)
        os.replace(tmp, path)
        return True
    except OSError:
        return False
    finally:
        try:
            os.unlink(tmp)
        except OSError:
            pass


def make_room_to_start(data_dir: str) -> tuple[int | None, bool]:
    """At the start of a process: when the disk under the data dir is (nearly)
    full, give back the reserve so the database can be opened. Returns the
    free bytes when the disk is full (None when it is not), and whether this
    call released the reserve (the process that did says so)."""
    try:
        if not nearly_full(data_dir):
            return None, False
        try:
            os.unlink(reserve_path(data_dir))
            released = True
        except FileNotFoundError:
            released = False
        return free_bytes(data_dir), released
    except OSError:
        return None, False


def full_disk_warning(free: int) -> str:
    return (f"WARNING: the disk under the data dir is full ({free} bytes free): serving reads;"
            " writes answer 503 STORAGE_FULL until space is freed (no restart needed)")


def check_room_for_upload(data_dir: str, min_free_bytes: int) -> None:
    """Refuse an upload before its body is read, while free space under the
    data dir is below ``min_free_bytes`` (BOTSVC_MIN_FREE_BYTES)."""
    if min_free_bytes and free_bytes(data_dir) < min_free_bytes:
        raise storage_full("The server's disk is too full to take an upload; retry later")
