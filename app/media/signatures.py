"""A minimal ClamAV signature database that works with no network at all.

freshclam cannot run on offline machines, and clamscan refuses to start
without a database, so tests and a fresh offline installation use this one.
It detects only the EICAR test file: it proves the scanner is wired in and
fails closed, and protects against nothing real. Operators install the
official database with ``freshclam`` and point BOTSVC_CLAMAV_DB at it (or
leave it unset to use the system's).
"""
from __future__ import annotations

import contextlib
import os

SIGNATURE_NAME = "Eicar-Test-Signature"
DB_FILE = "botsvc-test.ndb"


def eicar_bytes() -> bytes:
    """The 68-byte EICAR test string, assembled so that this source file is
    not itself flagged by scanners on developer machines."""
    parts = ["X5O!P%@AP[4\\PZX54(P^)7CC)7}$", "EICAR-STANDARD-", "ANTIVIRUS-TEST-FILE!$H+H*"]
    return "".join(parts).encode("ascii")


def build_test_signature_db(dest_dir: str) -> str:
    """Write the database into ``dest_dir`` (created if needed) and return it.

    An .ndb body signature anchored at offset 0, as the EICAR convention
    wants the string at the start of a file. ClamAV reports it as
    ``Eicar-Test-Signature.UNOFFICIAL``.
    """
    os.makedirs(dest_dir, mode=0o755, exist_ok=True)
    line = f"{SIGNATURE_NAME}:0:0:{eicar_bytes().hex()}\n"
    path = os.path.join(dest_dir, DB_FILE)
    try:
        with open(path, encoding="ascii") as fh:
            if fh.read() == line:
                return dest_dir   # already there: a start writes nothing (a full disk starts)
    except (OSError, UnicodeError):
        pass
    tmp = path + ".tmp"
    try:
        with open(tmp, "w", encoding="ascii") as fh:
            fh.write(line)
        os.replace(tmp, path)
    except BaseException:
        with contextlib.suppress(OSError):
            os.unlink(tmp)   # never a 0-byte temp file left behind (ENOSPC)
        raise
    return dest_dir
