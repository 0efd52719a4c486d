"""A real small file system for the full-disk tests: a tmpfs of a few MiB
(mounting needs root, as the suite has here and in CI; otherwise the test is
skipped with the reason), and a way to fill it to the last byte."""
from __future__ import annotations

import contextlib
import os
import subprocess
from collections.abc import Iterator
from pathlib import Path

import pytest


@contextlib.contextmanager
def small_tmpfs(parent: Path, size: str) -> Iterator[Path]:
    if os.geteuid() != 0:
        pytest.skip("mounting a small tmpfs needs root (the suite runs as root here and in CI)")
    mount = parent / "small-disk"
    mount.mkdir()
    done = subprocess.run(["mount", "-t", "tmpfs", "-o", f"size={size}", "tmpfs", str(mount)],
                          capture_output=True, text=True)
    if done.returncode != 0:
        pytest.skip(f"cannot mount a tmpfs here: {done.stderr.strip()}")
    try:
        yield mount
    finally:
        subprocess.run(["umount", "-l", str(mount)], check=False)


def fill(mount: Path, name: str = "filler") -> Path:
    """Write until the disk refuses a single byte more."""
    path = mount / name
    with open(path, "ab", buffering=0) as fh:
        for size in (1 << 20, 1 << 16, 4096, 512, 1):
            with contextlib.suppress(OSError):
                while True:
                    fh.write(b"\0" * size)
    assert os.statvfs(mount).f_bavail == 0
    return path
