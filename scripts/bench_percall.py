"""scripts/bench percall: what one call costs in process (Flask's test client),
this tree beside the baseline (the main this work started from), each in a
process of its own (scripts/percall_child.py), measured in alternating rounds
(ABBA: the baseline first in even rounds, last in odd ones) so that load from
elsewhere on the machine weighs on both alike.

The figure is CPU time per call (user+sys of the process, which is all the
call's work: the test client has no network), with wall time beside it;
``--instructions`` counts instructions under callgrind instead, which the
machine's load does not move at all.
"""
from __future__ import annotations

import json
import os
import re
import shutil
import statistics
import subprocess
import sys
from pathlib import Path

from botsvc.devkit.paths import REPO

BASELINE_COMMIT = "8b9f1aec3f403c1e743315cf646c3b786adaab04"
CACHE = REPO / ".bench-cache"
CHILD = REPO / "scripts" / "percall_child.py"
METHODS = ("sendMessage", "getMe")
AIM = 2 / 3   # down by a third


def baseline_tree() -> Path:
    """A git worktree of the baseline commit, made once and kept in the cache."""
    tree = CACHE / f"percall-baseline-{BASELINE_COMMIT[:12]}"
    if not (tree / "app").is_dir():
        CACHE.mkdir(exist_ok=True)
        subprocess.run(["git", "-C", str(REPO), "worktree", "prune"], check=True)
        subprocess.run(["git", "-C", str(REPO), "worktree", "add", "--detach", str(tree),
                        BASELINE_COMMIT], check=True, capture_output=True)
    return tree


def baseline_server_argv() -> list[str]:
    """The baseline tree's own scripts/server (its .venv made once, now: the
    first bootstrap takes longer than a server is given to start)."""
    tree = baseline_tree()
    subprocess.run(["bash", "-c", f"source {tree}/scripts/bootstrap"], check=True,
                   capture_output=True)
    return [str(tree / "scripts" / "server")]


class Child:
    def __init__(self, tree: Path, data_dir: Path, call_log: bool = True):
        data_dir.mkdir(parents=True)
        env = dict(os.environ, PERCALL_CALL_LOG="on" if call_log else "off")
        self.process = subprocess.Popen(
            [sys.executable, str(CHILD), str(tree), str(data_dir)], cwd=tree, env=env,
            stdin=subprocess.PIPE, stdout=subprocess.PIPE, stderr=subprocess.DEVNULL, text=True)
        ready = self.process.stdout.readline().strip()
        if ready != "ready":
            raise SystemExit(f"percall child for {tree} did not start ({ready!r})")

    def measure(self, method: str, calls: int) -> dict:
        self.process.stdin.write(f"{method} {calls}\n")
        self.process.stdin.flush()
        return json.loads(self.process.stdout.readline())

    def close(self) -> None:
        self.process.stdin.close()
        self.process.wait(timeout=30)


def run(tmp: Path, rounds: int = 12, calls: int = 400) -> None:
    """The baseline, this tree, and this tree with the bot's call log off
    (the baseline has no call log: a lone call's record is a transaction of
    its own, docs/call-log.md), in turns whose order reverses every round."""
    trees = {"baseline": (baseline_tree(), True), "this tree": (REPO, True),
             "this tree, call log off": (REPO, False)}
    children = {name: Child(tree, tmp / re.sub(r"\W+", "-", name), call_log)
                for name, (tree, call_log) in trees.items()}
    figures = {(name, method, kind): [] for name in trees for method in METHODS
               for kind in ("cpu", "wall")}
    try:
        for turn in range(rounds):
            order = list(children) if turn % 2 == 0 else list(children)[::-1]
            for method in METHODS:
                for name in order:
                    measured = children[name].measure(method, calls)
                    for kind in ("cpu", "wall"):
                        figures[(name, method, kind)].append(measured[kind] / calls * 1e6)
    finally:
        for child in children.values():
            child.close()
    print(f"percall: Flask test client in process; baseline {BASELINE_COMMIT[:12]} and this "
          f"tree (with its call log, and without) in separate processes, {rounds} rounds of "
          f"{calls} calls each, in turns")
    for name in ("this tree", "this tree, call log off"):
        print(f"  {name}:")
        for method in METHODS:
            for kind in ("cpu", "wall"):
                base = figures[("baseline", method, kind)]
                this = figures[(name, method, kind)]
                ratios = [t / b for b, t in zip(base, this, strict=True)]
                print(f"    {method:<12} {kind:>4}: {statistics.median(this):7.1f} us beside "
                      f"{statistics.median(base):7.1f} us = {statistics.median(ratios):.2f} "
                      f"(rounds {min(ratios):.2f}-{max(ratios):.2f}; aim {AIM:.2f} or less)")


def instructions(tmp: Path, small: int = 50, large: int = 250) -> None:
    """Instructions per call under callgrind: two runs of each tree and method
    (``small`` and ``large`` calls after the same set-up), the difference
    divided by the calls between them."""
    if shutil.which("valgrind") is None:
        raise SystemExit("valgrind is missing: apt-get install valgrind")
    trees = {"baseline": baseline_tree(), "this tree": REPO}
    counts = {}
    for name, tree in trees.items():
        for method in METHODS:
            runs = []
            for calls in (small, large):
                data_dir = tmp / f"cg-{name.replace(' ', '-')}-{method}-{calls}"
                data_dir.mkdir(parents=True)
                done = subprocess.run(
                    ["valgrind", "--tool=callgrind", "--callgrind-out-file=/dev/null",
                     sys.executable, str(CHILD), str(tree), str(data_dir), "--once", method,
                     str(calls)], cwd=tree, capture_output=True, text=True)
                found = re.search(r"Collected : (\d+)", done.stderr)
                if done.returncode != 0 or not found:
                    raise SystemExit(f"callgrind run failed:\n{done.stderr[-2000:]}")
                runs.append(int(found.group(1)))
            counts[(name, method)] = (runs[1] - runs[0]) / (large - small)
    print(f"percall --instructions: callgrind, ({large} - {small}) calls after the same "
          f"set-up, per call")
    for method in METHODS:
        base, this = counts[("baseline", method)], counts[("this tree", method)]
        print(f"  {method:<12} {this / 1e6:7.2f} M instructions beside {base / 1e6:7.2f} M "
              f"= {this / base:.2f} (aim {AIM:.2f} or less)")
