"""A real clamd for the suite: on a private unix socket, with the offline
test database, started once per test process.

Most tests that upload scan through it: a scan over clamd's socket costs a
millisecond, where each clamscan run loads the engine and its database
again (13 ms, with two sandbox wrappers around it), and the in-process
tests made some 600 of them. The tests of clamscan itself
(tests/media/test_media_scanner.py) and every server test keep clamscan.
"""
from __future__ import annotations

import os
import shutil
import subprocess
import time
from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path


@contextmanager
def running_clamd(root: Path, database: str, stream_max: str) -> Iterator[str]:
    """clamd with ``AlertExceedsMax`` and the given StreamMaxLength (as
    clamd.conf spells it: ``1M``), as an operator must run it; yields its
    socket's path."""
    binary = shutil.which("clamd", path=os.environ.get("PATH", "") + ":/usr/sbin:/sbin")
    assert binary, "clamd is installed on this machine"
    sock = root / "clamd.sock"
    conf = root / "clamd.conf"
    conf.write_text(
        f"LocalSocket {sock}\nDatabaseDirectory {database}\nForeground yes\n"
        f"StreamMaxLength {stream_max}\nAlertExceedsMax yes\nLogFile {root / 'clamd.log'}\n"
        f"TemporaryDirectory {root}\n"
    )
    proc = subprocess.Popen([binary, "-c", str(conf)], stdout=subprocess.DEVNULL,
                            stderr=subprocess.DEVNULL, start_new_session=True)
    try:
        deadline = time.monotonic() + 60
        while not sock.exists():
            assert proc.poll() is None, "clamd exited at start"
            assert time.monotonic() < deadline, "clamd did not open its socket"
            time.sleep(0.02)
        yield str(sock)
    finally:
        proc.terminate()
        try:
            proc.wait(timeout=10)
        except subprocess.TimeoutExpired:
            proc.kill()
            proc.wait()


def scanning_socket(request, suite_clamd: str) -> str | None:
    """The suite's clamd, or None (clamscan) for a test marked ``clamscan``."""
    return None if request.node.get_closest_marker("clamscan") else suite_clamd
