"""The installation's signing key (signed download URLs): a file in the data
dir, made once by whichever process starts first, read by every other.
Settings.from_env loads it unless BOTSVC_SECRET_KEY gives one."""
from __future__ import annotations

import contextlib
import errno
import os
import secrets


def load_or_create_secret(data_dir: str) -> bytes:
    """The signing key, generated once and kept in the data dir (mode 0600).

    Written whole to a temporary file, then linked into place: the first of
    several starting workers wins, the others read what it wrote, and a disk
    too full to hold it leaves no empty key file behind (one clear line
    instead; with a key already there, a start writes nothing).
    """
    os.makedirs(data_dir, mode=0o700, exist_ok=True)
    path = os.path.join(data_dir, "secret_key")
    if not os.path.exists(path):
        _write_new_secret(data_dir, path)
    with open(path, "rb") as fh:
        key = fh.read().strip()
    if not key:
        raise SystemExit(f"botsvc: the signing key file {path} is empty: remove it to generate"
                         " a new one (signed download URLs given out so far stop working)")
    return key


def _write_new_secret(data_dir: str, path: str) -> None:
    tmp = os.path.join(data_dir, f".secret_key.{secrets.token_hex(8)}.tmp")
    try:
        fd = os.open(tmp, os.O_WRONLY | os.O_CREAT | os.O_EXCL, 0o600)
        with os.fdopen(fd, "wb") as fh:
            fh.write(secrets.token_hex(32).encode())
            fh.flush()
            os.fsync(fh.fileno())
        try:
            os.link(tmp, path)
        except FileExistsError:
            pass   # another worker's key won; it is read back by the caller
    except OSError as exc:
        if exc.errno in (errno.ENOSPC, errno.EDQUOT):
            raise SystemExit(f"botsvc: cannot create the signing key in {data_dir}:"
                             " the disk is full") from None
        raise
    finally:
        with contextlib.suppress(OSError):
            os.unlink(tmp)
