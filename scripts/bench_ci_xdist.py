"""scripts/bench ci, its second half: the same plugin suite under pytest-xdist
(``-n 2``) two ways, and the quick server's start and stop beside
telegram-test-api's.

- one server per xdist worker: what the plugin does (each worker's session
  starts its own, side by side);
- one shared server: started once by xdist's controller before its workers
  (a conftest.py of the suite's own, as a lock file and a state file would
  do it inside the plugin), every worker given it by BOTSVC_URL.

Rounds alternate the two ways; printed: the whole run's medians and their
ratio. Then the launcher alone: ``LocalServer`` started and stopped quickly,
beside telegram-test-api's node process started and stopped, alternating.
"""
from __future__ import annotations

import json
import subprocess
import sys
import time
from pathlib import Path

from scripts.measure import median

XDIST_TESTS = 40

SHARED_CONFTEST = '''
import os, tempfile

def pytest_configure(config):
    """xdist's controller: one server for every worker, before they start."""
    if hasattr(config, "workerinput"):
        return
    from botsvc.testkit.server import QUICK_ENV, LocalServer
    server = LocalServer(os.path.join(tempfile.mkdtemp(), "botsvc"), QUICK_ENV).start()
    config._shared_botsvc = server
    os.environ["BOTSVC_URL"], os.environ["BOTSVC_ADMIN_TOKEN"] = (server.base_url,
                                                                 server.admin_token)

def pytest_unconfigure(config):
    server = getattr(config, "_shared_botsvc", None)
    if server is not None:
        server.stop(quick=True)
'''

LAUNCHERS = '''
import json, os, subprocess, sys, tempfile, time
from botsvc.testkit.server import QUICK_ENV, LocalServer, free_port

def botsvc():
    server = LocalServer(os.path.join(tempfile.mkdtemp(), "botsvc"), QUICK_ENV)
    started = time.perf_counter()
    server.start()
    up = time.perf_counter()
    server.operator("listBots")
    stopping = time.perf_counter()
    server.stop(quick=True)
    return up - started, time.perf_counter() - stopping

def ttapi():
    js = ("const S = require('telegram-test-api'); const s = new S({port: Number(process.argv[1]),"
          " host: '127.0.0.1'}); s.start().then(() => console.log('ready'));"
          " process.on('SIGTERM', () => s.stop().then(() => process.exit(0)));")
    started = time.perf_counter()
    node = subprocess.Popen(["node", "-e", js, str(free_port())], cwd=sys.argv[1],
                            stdout=subprocess.PIPE, text=True)
    assert node.stdout.readline().strip() == "ready"
    up = time.perf_counter()
    node.terminate()
    node.wait()
    return up - started, time.perf_counter() - up

print(json.dumps({"botsvc": botsvc(), "ttapi": ttapi()}))
'''


def _pip_xdist(python: Path) -> None:
    done = subprocess.run([str(python), "-m", "pip", "install", "-q", "pytest-xdist"],
                          capture_output=True, text=True)
    if done.returncode != 0:
        raise SystemExit(f"pip install pytest-xdist failed:\n{done.stdout}{done.stderr}")


def _xdist_run(python: Path, suite: Path, env: dict) -> float:
    started = time.perf_counter()
    done = subprocess.run([str(python), "-m", "pytest", "-q", "-p", "no:cacheprovider", "-x",
                           "-n", "2"], cwd=suite, env={**env, "BENCH_TESTS": str(XDIST_TESTS)},
                          capture_output=True, text=True)
    if done.returncode != 0:
        raise SystemExit(f"the xdist suite in {suite} failed:\n{done.stdout[-3000:]}")
    return time.perf_counter() - started


def xdist(python: Path, plugin_suite: Path, tmp: Path, env: dict, rounds: int = 3) -> None:
    """One server per worker against one shared server, alternating."""
    _pip_xdist(python)
    shared = tmp / "plugin-shared"
    shared.mkdir()
    for name in ("test_bot.py", "conftest.py"):
        (shared / name).write_text((plugin_suite / name).read_text())
    with open(shared / "conftest.py", "a") as fh:
        fh.write(SHARED_CONFTEST)
    ways = {"a server per worker": plugin_suite, "one shared server": shared}
    runs: dict[str, list[float]] = {way: [] for way in ways}
    for turn in range(rounds):
        for way in (list(ways) if turn % 2 == 0 else list(reversed(ways))):
            runs[way].append(_xdist_run(python, ways[way], env))
    per, one = (median(runs[way]) for way in ways)
    print(f"xdist -n 2, {XDIST_TESTS} tests, medians of {rounds} alternating rounds: a server"
          f" per worker {per:.2f} s, one shared server {one:.2f} s ({one / per:.2f}x)")


def launchers(python: Path, npm_modules: Path, rounds: int = 5) -> None:
    """The quick server's start and stop beside telegram-test-api's."""
    samples = []
    for _ in range(rounds):
        done = subprocess.run([str(python), "-c", LAUNCHERS, str(npm_modules)],
                              capture_output=True, text=True, cwd=npm_modules)
        if done.returncode != 0:
            sys.exit(f"the launchers' run failed:\n{done.stdout}{done.stderr}")
        samples.append(json.loads(done.stdout))
    for i, what in enumerate(("start", "stop")):
        mine = median([s["botsvc"][i] for s in samples])
        theirs = median([s["ttapi"][i] for s in samples])
        print(f"{what}: the quick server {mine:.3f} s, telegram-test-api {theirs:.3f} s"
              f" ({mine / theirs:.2f}x; medians of {rounds})")
