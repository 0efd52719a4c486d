"""The code a benchmark compares against, checked out beside this tree.

``baseline_tree`` makes a detached ``git worktree`` of a commit (by default
``BASELINE_REF``: main just before webhook connections were kept and
broadcasts were sped up; ``BOTSVC_BENCH_BASELINE`` names another) and
``baseline_argv`` starts that tree's server with this tree's .venv, so both
servers run in the same sitting on the same machine and the figures can be
compared round by round. The server imports the tree's own code, whichever
name it uses (scripts/tree_import.py): this .venv alone would give a tree
whose code says ``botsvc`` this tree's modules.
"""
from __future__ import annotations

import contextlib
import os
import shlex
import subprocess
import sys
from collections.abc import Iterator
from pathlib import Path

from scripts.tree_import import package_name, tree_env

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
    """``tree``'s server with this tree's .venv, importing ``tree``'s code:
    ``botsvc serve`` for a tree that installs as botsvc (its migrations, then
    its gunicorn), else the gunicorn entry of its time (its config and
    ``wsgi.py``). Started in ``tree``."""
    python = shlex.quote(sys.executable)
    if package_name(tree) == "botsvc":
        serve = f"{python} -m botsvc.cli serve"
    else:
        serve = f"{python} -m gunicorn -c app/gunicorn_conf.py wsgi:app"
    env = " ".join(f"{name}={shlex.quote(value)}" for name, value in tree_env(tree).items())
    return ["/bin/sh", "-c", f"cd {shlex.quote(str(tree))} && exec env {env} {serve}"]


def describe(ref: str | None = None) -> str:
    ref = ref or baseline_ref()
    line = subprocess.run(["git", "-C", str(ROOT), "log", "-1", "--format=%h %s", ref],
                          capture_output=True, text=True, check=False).stdout.strip()
    return line[:90] or ref
