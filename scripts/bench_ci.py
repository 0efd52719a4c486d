"""scripts/bench ci: a bot developer's CI suite on the pytest plugin beside the
same suite on telegram-test-api (npm, in memory), the plugin's nearest peer,
and beside the same suite with the bot written with botsvc.bot (the "sdk"
side: named in pytest.ini, run in process by ``bot_under_test``).

The plugin side runs in a fresh venv made from this tree's wheel (pytest and
botsvc only, so no other pytest plugin adds to its start). Both suites run
in that venv's pytest; only the service differs. Per test: a new bot and
user, the user starts and says something, the bot (a thread of the test)
polls getUpdates and answers, the test waits for the answer. Both bots poll
with the same pauses (2 ms, growing to 50 ms): neither service long-polls
getUpdates. The plugin's wait is its own (a read the server answers once
the bot's message is there); telegram-test-api's polls with those pauses.

Rounds alternate the sides and the sizes (10 and 50 tests). Printed, as
medians: the whole run; the fixed cost (process start to the first test's
body, the last test's body to the process's exit); the per-test cost (the
span from the first test's body to the last one's, 50-test run minus 10-test
run, over 40: the process's start and exit, which swing by a tenth of a
second on a busy machine, are not in it); and their ratios. Then
(scripts/bench_ci_xdist.py) the launchers' start and stop, and the suite
under pytest-xdist with a server per worker and with one shared server.
"""
from __future__ import annotations

import json
import os
import subprocess
import sys
import time
import venv
from pathlib import Path

from botsvc.devkit.paths import REPO
from scripts import bench_ci_xdist
from scripts.measure import median

CACHE = REPO / ".bench-cache"
NPM_DIR = CACHE / "ci-npm"
SIZES = (10, 50)

CONFTEST = '''
import json, os, time
import pytest

_stamps = {}

@pytest.hookimpl(tryfirst=True)
def pytest_runtest_call(item):
    _stamps.setdefault("first", time.time())

def pytest_runtest_makereport(item, call):
    if call.when == "call":
        _stamps["last"] = call.stop

def pytest_unconfigure(config):
    with open(os.environ["BENCH_STAMPS"], "w") as fh:
        json.dump(_stamps, fh)
'''

# The same bot and the same waits on both sides: only the URLs differ.
COMMON = '''
import threading, time, requests

def pauses():
    pause = 0.002
    while True:
        yield pause
        pause = min(pause * 1.5, 0.05)

def run_bot(call):
    """Answer the first text that is not a command with the same text."""
    waits = pauses()
    while True:
        for update in call("getUpdates"):
            message = update.get("message") or {}
            if message.get("text") and not message["text"].startswith("/"):
                call("sendMessage", chat_id=message["chat"]["id"], text=message["text"])
                return
        time.sleep(next(waits))

def start_bot(call):
    thread = threading.Thread(target=run_bot, args=(call,), daemon=True)
    thread.start()
    return thread
'''

PLUGIN_SUITE = COMMON + '''
import pytest

@pytest.mark.parametrize("n", range(int(__import__("os").environ["BENCH_TESTS"])))
def test_echo(n, botsvc_bot, botsvc_user):
    session = requests.Session()
    session.headers["Authorization"] = f"Bearer {botsvc_bot.token}"
    offset = [0]

    def call(method, **params):
        if method == "getUpdates":
            params["offset"] = offset[0]
        result = session.post(f"{botsvc_bot.base_url}/v2/{method}", json=params).json()["result"]
        if method == "getUpdates" and result:
            offset[0] = result[-1]["update_id"] + 1
        return result

    bot = start_bot(call)
    botsvc_user.start()
    botsvc_user.say(f"hello {n}")
    assert botsvc_user.wait_for_message(f"hello {n}")["text"] == f"hello {n}"
    bot.join(10)
'''

# The same flow with the bot written with botsvc.bot and named in pytest.ini:
# bot_under_test polls it in process for the whole test, at the plugin's pace.
SDK_BOT = '''
from botsvc.bot import Bot

bot = Bot()


@bot.text()
def echo(ctx):
    ctx.reply(ctx.text)
'''

SDK_SUITE = '''
import os
import pytest

@pytest.mark.parametrize("n", range(int(os.environ["BENCH_TESTS"])))
def test_echo(n, bot_under_test, botsvc_user):
    botsvc_user.start()
    botsvc_user.say(f"hello {n}")
    assert botsvc_user.wait_for_message(f"hello {n}")["text"] == f"hello {n}"
'''

SDK_INI = "[pytest]\nbotsvc_bot_object = echo_sdk_bot:bot\n"

TTAPI_SUITE = COMMON + '''
import itertools, os, secrets, socket, subprocess
import pytest

SERVER_JS = """
const TelegramServer = require('telegram-test-api');
const server = new TelegramServer({port: Number(process.argv[1]), host: '127.0.0.1'});
server.start().then(() => console.log('ready'));
process.on('SIGTERM', () => server.stop().then(() => process.exit(0)));
"""
ids = itertools.count(1)

@pytest.fixture(scope="session")
def ttapi():
    with socket.socket() as sock:
        sock.bind(("127.0.0.1", 0))
        port = sock.getsockname()[1]
    node = subprocess.Popen(["node", "-e", SERVER_JS, str(port)], cwd=os.environ["BENCH_NPM"],
                            stdout=subprocess.PIPE, text=True)
    assert node.stdout.readline().strip() == "ready"
    yield f"http://127.0.0.1:{port}"
    node.terminate()
    node.wait()

@pytest.mark.parametrize("n", range(int(os.environ["BENCH_TESTS"])))
def test_echo(n, ttapi):
    session = requests.Session()
    token, user = secrets.token_hex(8), next(ids)

    def call(method, **params):
        return session.post(f"{ttapi}/bot{token}/{method}", json=params).json()["result"]

    def say(text, route="sendMessage", **extra):
        person = {"id": user, "first_name": "T", "username": f"u{user}"}
        session.post(f"{ttapi}/{route}", json={
            "botToken": token, "date": int(time.time()), "text": text, **extra,
            "from": {**person, "is_bot": False}, "chat": {**person, "type": "private"}})

    bot = start_bot(call)
    say("/start", "sendCommand", entities=[{"offset": 0, "length": 6, "type": "bot_command"}])
    say(f"hello {n}")
    waits, deadline = pauses(), time.monotonic() + 10
    while True:
        got = session.post(f"{ttapi}/getUpdates", json={"token": token, "chatId": user}).json()
        texts = [u["message"]["text"] for u in got["result"]]
        if f"hello {n}" in texts:
            break
        assert time.monotonic() < deadline, "no answer"
        time.sleep(next(waits))
    bot.join(10)
'''


def _quiet(argv: list[str]) -> None:
    """Run a pip step, showing its output only if it fails."""
    done = subprocess.run(argv, capture_output=True, text=True)
    if done.returncode != 0:
        raise SystemExit(f"{' '.join(argv[:4])} failed:\n{done.stdout}{done.stderr}")


def fresh_venv(tmp: Path) -> Path:
    """A venv with this tree's wheel and pytest, nothing else: its python."""
    wheels = tmp / "wheel"
    _quiet([sys.executable, "-m", "pip", "wheel", "-q", "--no-deps", "-w", str(wheels),
            str(REPO)])
    env_dir = tmp / "venv"
    venv.create(env_dir, with_pip=True)
    python = env_dir / "bin" / "python"
    _quiet([str(python), "-m", "pip", "install", "-q", "pytest",
            *map(str, wheels.glob("*.whl"))])
    return python


def npm_ttapi() -> None:
    """telegram-test-api in the bench's cache (installed once)."""
    if not (NPM_DIR / "node_modules" / "telegram-test-api").is_dir():
        NPM_DIR.mkdir(parents=True, exist_ok=True)
        (NPM_DIR / "package.json").write_text('{"private": true}\n')
        subprocess.run(["npm", "install", "--no-audit", "--no-fund", "-q", "telegram-test-api"],
                       cwd=NPM_DIR, check=True)


def suite_env(stamps: Path) -> dict:
    """The environment of a suite's run: no server given, no checkout on the path."""
    env = {**os.environ, "BENCH_STAMPS": str(stamps), "BENCH_NPM": str(NPM_DIR / "node_modules")}
    for name in ("BOTSVC_URL", "BOTSVC_ADMIN_TOKEN", "PYTHONPATH"):
        env.pop(name, None)
    return env


def run_suite(python: Path, suite_dir: Path, tests: int) -> dict:
    """One pytest run of ``tests`` tests: whole, fixed and the body span."""
    stamps = suite_dir / "stamps.json"
    env = {**suite_env(stamps), "BENCH_TESTS": str(tests)}
    started = time.time()
    done = subprocess.run([str(python), "-m", "pytest", "-q", "-p", "no:cacheprovider", "-x"],
                          cwd=suite_dir, env=env, capture_output=True, text=True)
    ended = time.time()
    if done.returncode != 0:
        raise SystemExit(f"the suite in {suite_dir} failed:\n{done.stdout[-3000:]}")
    marks = json.loads(stamps.read_text())
    return {"whole": ended - started,
            "fixed": (marks["first"] - started) + (ended - marks["last"]),
            "span": marks["last"] - marks["first"]}


def write_suites(tmp: Path) -> dict[str, Path]:
    suites = {}
    for side, body in (("plugin", PLUGIN_SUITE), ("ttapi", TTAPI_SUITE), ("sdk", SDK_SUITE)):
        folder = tmp / side
        folder.mkdir()
        (folder / "conftest.py").write_text(CONFTEST)
        (folder / "test_bot.py").write_text(body)
        suites[side] = folder
    (suites["sdk"] / "echo_sdk_bot.py").write_text(SDK_BOT)
    (suites["sdk"] / "pytest.ini").write_text(SDK_INI)
    return suites


def run(tmp: Path, rounds: int = 5) -> None:
    npm_ttapi()
    python = fresh_venv(tmp)
    suites = write_suites(tmp)
    runs: dict[tuple[str, int], list[dict]] = {(s, n): [] for s in suites for n in SIZES}
    for turn in range(rounds):   # alternate sides and sizes: other load weighs on all
        order = list(suites) if turn % 2 == 0 else list(reversed(suites))
        for tests in SIZES:
            for side in order:
                runs[side, tests].append(run_suite(python, suites[side], tests))
    figures = {}
    for side in suites:
        whole = {n: median([r["whole"] for r in runs[side, n]]) for n in SIZES}
        span = {n: median([r["span"] for r in runs[side, n]]) for n in SIZES}
        figures[side] = {
            "whole": whole,
            "fixed": median([r["fixed"] for r in runs[side, SIZES[0]]]),
            "per_test": (span[SIZES[1]] - span[SIZES[0]]) / (SIZES[1] - SIZES[0])}
    print(f"ci: a bot's suite, medians of {rounds} alternating rounds")
    print(f"{'':22}{'plugin':>10}{'ttapi':>10}{'ratio':>8}{'sdk bot':>10}{'/plugin':>9}")
    rows = [(f"{n} tests, whole (s)", lambda f, n=n: f["whole"][n]) for n in SIZES]
    rows += [("fixed cost (s)", lambda f: f["fixed"]),
             ("per test (ms)", lambda f: f["per_test"] * 1000)]
    for label, value in rows:
        mine, theirs, sdk = (value(figures[side]) for side in ("plugin", "ttapi", "sdk"))
        print(f"{label:22}{mine:10.3f}{theirs:10.3f}{mine / theirs:8.2f}x"
              f"{sdk:10.3f}{sdk / mine:8.2f}x")
    bench_ci_xdist.launchers(python, NPM_DIR / "node_modules")
    bench_ci_xdist.xdist(python, suites["plugin"], tmp, suite_env(tmp / "xdist-stamps.json"))
