"""The code a benchmark compares against, checked out beside this tree.

``baseline_tree`` makes a detached ``git worktree`` of a commit (by default
``BASELINE_REF``: main just before webhook connections were kept and
broadcasts were sped up; ``BOTSVC_BENCH_BASELINE`` names another) and
``baseline_argv`` starts that tree's gunicorn with this tree's .venv, so both
servers run in the same sitting on the same machine and the figures can be
compared round by round.
"""
from __future__ import annotations

import contextlib
import os
import shlex
import subprocess
import sys
from collections.abc import Iterator
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
BASELINE_REF = "8b9f1ae"


def baseline_ref() -> str:
    return os.environ.get("BOTSVC_BENCH_BASELINE", BASELINE_REF)


@contextlib.contextmanager
def baseline_tree(tmp: Path, ref: str | None = None) -> Iterator[Path]:
    """A checkout of ``ref`` under ``tmp``, removed afterwards."""
    tree = tmp / "baseline-tree"
    ref = ref or baseline_ref()
    subprocess.run(["git", "-C", str(ROOT), "worktree", "add", "--detach", "--quiet",
                    str(tree), ref], check=True)
    try:
        yield tree
    finally:
        subprocess.run(["git", "-C", str(ROOT), "worktree", "remove", "--force", str(tree)],
                       check=False)


def baseline_argv(tree: Path) -> list[str]:
    """gunicorn serving ``tree``'s app (its own config and migrations), with
    this tree's .venv. Started in ``tree``, so that ``app`` is imported from
    there (the current directory comes before this tree's editable install)."""
    command = (f"cd {shlex.quote(str(tree))} && exec {shlex.quote(sys.executable)} -m gunicorn"
               " -c app/gunicorn_conf.py wsgi:app")
    return ["/bin/sh", "-c", command]


def describe(ref: str | None = None) -> str:
    ref = ref or baseline_ref()
    line = subprocess.run(["git", "-C", str(ROOT), "log", "-1", "--format=%h %s", ref],
                          capture_output=True, text=True, check=False).stdout.strip()
    return line[:90] or ref
