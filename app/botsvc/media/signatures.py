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
# Where Debian's freshclam keeps the official signatures, which clamscan
# loads when it is given no --database.
SYSTEM_DATABASE = "/var/lib/clamav"
# The files clamscan loads from a database directory: the official
# containers (.cvd, .cld, .cud) and the plain signature formats.
SIGNATURE_SUFFIXES = (".cvd", ".cld", ".cud", ".ndb", ".hdb", ".hsb", ".ldb", ".mdb", ".msb",
                      ".ndu", ".ldu", ".yar", ".yara")
# The test database's directory under a data dir, for a start without signatures.
OFFLINE_DATABASE_DIR = "clamav-test-db"


def has_signatures(path: str) -> bool:
    """Whether clamscan would find signatures in ``path`` (a database file or
    directory). It loads them only to scan (seconds and over a GiB with the
    official ones), so the files are looked for instead."""
    if os.path.isfile(path):
        return path.endswith(SIGNATURE_SUFFIXES)
    try:
        return any(name.endswith(SIGNATURE_SUFFIXES) for name in os.listdir(path))
    except OSError:
        return False


def needs_offline_database(clamd_socket: str | None, clamav_db: str | None) -> bool:
    """True when nothing gives the scanner signatures: no clamd (it loads its
    own), no database named, and none where the system keeps them (an offline
    machine where freshclam never ran). A start then scans with the test
    database (``build_test_signature_db``) and says so loudly."""
    return not clamd_socket and not clamav_db and not has_signatures(SYSTEM_DATABASE)


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
