"""``botsvc run-transcript`` as a CI job runs it: a separate process, a bot
that is its own process (tests/transcripts/process_bot.py, standard library
only), green and red, JUnit XML, a bot that exits or hangs, bad input as
exit status 2 with one line, and no process left behind."""
from __future__ import annotations

import json
import signal
import subprocess
import sys
import time
import xml.etree.ElementTree as ET
from pathlib import Path

import pytest

from botsvc.devkit.servers import running_server
from botsvc.testkit.server import free_port

pytestmark = pytest.mark.server
HERE = Path(__file__).parent
WELCOME = HERE / "welcome.json"
BOT = [sys.executable, str(HERE / "process_bot.py")]


@pytest.fixture(scope="module")
def server(tmp_path_factory):
    with running_server(tmp_path_factory.mktemp("transcripts"), BOTSVC_TEST_TOOLS=1) as server:
        yield server


@pytest.fixture
def on_server(server, monkeypatch):
    monkeypatch.setenv("BOTSVC_URL", server.base_url)
    monkeypatch.setenv("BOTSVC_ADMIN_TOKEN", server.admin_token)
    return server


def run(*args: str, cwd: Path | None = None, timeout: float = 120) -> subprocess.CompletedProcess:
    return subprocess.run([sys.executable, "-m", "botsvc.cli", "run-transcript", *args],
                          capture_output=True, text=True, timeout=timeout, cwd=cwd)


def red_copy(tmp_path: Path) -> Path:
    """The welcome transcript expecting another echo: the polite bot fails it."""
    transcript = json.loads(WELCOME.read_text())
    transcript["steps"][1]["bot"][0]["text"] = "You said: hello!"
    red = tmp_path / "red.json"
    red.write_text(json.dumps(transcript))
    return red


def alive(pid: int) -> bool:
    try:
        state = Path(f"/proc/{pid}/stat").read_text().rsplit(")", 1)[1].split()[0]
    except (OSError, IndexError):
        return False
    return state != "Z"   # a zombie left to an init that does not reap is gone too


def test_green_and_red_with_junit_xml(on_server, tmp_path):
    red, report = red_copy(tmp_path), tmp_path / "report.xml"
    done = run(str(WELCOME), str(red), "--junit-xml", str(report), "--", *BOT, cwd=tmp_path)
    assert done.returncode == 1, done.stdout + done.stderr
    lines = done.stdout.splitlines()
    assert lines[0] == f"PASS {WELCOME}"
    assert lines[1:4] == [
        f"FAIL {red}: step 2 (user.say('hello')), reaction 1:",
        "  expected: the bot sent a message: type='text', text='You said: hello!'",
        "  actual:   the bot sent a message: type='text', text='You said: hello'"]
    assert lines[4] == "  the bot's last lines:"
    assert lines[5].startswith("  | process bot polling http://127.0.0.1:")
    assert lines[-1] == "1 passed, 1 failed"
    assert done.stderr == f"botsvc: using the server at {on_server.base_url}\n"
    suite = ET.parse(report).getroot().find("testsuite")
    assert (suite.get("tests"), suite.get("failures")) == ("2", "1")
    green_case, red_case = suite.findall("testcase")
    assert green_case.get("name") == str(WELCOME) and green_case.find("failure") is None
    failure = red_case.find("failure")
    assert failure.get("message") == "step 2 (user.say('hello')), reaction 1:"
    assert "expected: the bot sent a message: type='text', text='You said: hello!'" in failure.text
    assert red_case.find("system-out").text.startswith("process bot polling")


def test_all_green_exits_0(on_server, tmp_path):
    done = run(str(WELCOME), "--timeout", "5", "--", *BOT, cwd=tmp_path)
    assert (done.returncode, done.stdout) == (0, f"PASS {WELCOME}\n1 passed, 0 failed\n")


def test_a_bot_that_exits_fails_the_step_with_its_status_and_last_lines(on_server, tmp_path):
    done = run(str(WELCOME), "--", *BOT, "--exit-on", "hello", cwd=tmp_path)
    assert done.returncode == 1, done.stdout + done.stderr
    lines = done.stdout.splitlines()
    assert lines[0] == (f"FAIL {WELCOME}: step 2 (user.say('hello')), reaction 1: the bot under"
                        f" test ({' '.join(BOT)} --exit-on hello) exited with status 3;"
                        " its last lines:")
    assert lines[2] == "  | giving up on 'hello'"
    assert lines[-1] == "0 passed, 1 failed"


def test_a_hanging_bot_is_stopped_and_the_run_goes_on(on_server, tmp_path):
    """It ignores SIGTERM: SIGKILL after 5 s stops it and its child, then
    the next file runs with a new one."""
    pids = tmp_path / "pids"
    done = run(str(WELCOME), str(WELCOME), "--timeout", "0.5", "--", *BOT, "--hang",
               "--pids", str(pids), cwd=tmp_path)
    assert done.returncode == 1, done.stdout + done.stderr
    fails = [line for line in done.stdout.splitlines() if line.startswith("FAIL")]
    assert fails == [f"FAIL {WELCOME}: step 1 (user.start()), reaction 1:"] * 2
    assert "  actual:   nothing within 0.5 s" in done.stdout
    assert "  | hanging" in done.stdout
    started = [int(pid) for pid in pids.read_text().split()]
    assert len(started) == 4 and not [pid for pid in started if alive(pid)]


def test_a_stopped_run_leaves_no_process_behind(tmp_path, monkeypatch):
    """SIGTERM to the run itself, mid-replay, on a server it started: its
    bot (which ignores SIGTERM) and its server are stopped on the way out."""
    monkeypatch.delenv("BOTSVC_URL", raising=False)
    pids = tmp_path / "pids"
    runner = subprocess.Popen([sys.executable, "-m", "botsvc.cli", "run-transcript",
                               str(WELCOME), "--", *BOT, "--hang", "--pids", str(pids)],
                              cwd=tmp_path, stdout=subprocess.PIPE, stderr=subprocess.PIPE,
                              text=True)
    deadline = time.monotonic() + 60
    while not pids.exists() and time.monotonic() < deadline:
        time.sleep(0.05)
    children = Path(f"/proc/{runner.pid}/task/{runner.pid}/children").read_text().split()
    runner.send_signal(signal.SIGTERM)
    assert runner.wait(timeout=30) == 128 + signal.SIGTERM
    left = [int(pid) for pid in pids.read_text().split() + children if alive(int(pid))]
    assert left == [], left
    assert runner.stderr.read().startswith("botsvc: started a server at http://127.0.0.1:")


def test_on_a_server_it_starts_and_stops_itself(tmp_path, monkeypatch):
    monkeypatch.delenv("BOTSVC_URL", raising=False)
    done = run(str(WELCOME), "--", *BOT, cwd=tmp_path)
    assert (done.returncode, done.stdout) == (0, f"PASS {WELCOME}\n1 passed, 0 failed\n")
    (line,) = done.stderr.splitlines()
    url = line.removeprefix("botsvc: started a server at ")
    with pytest.raises(OSError):
        __import__("urllib.request").request.urlopen(url + "/healthz", timeout=2)


@pytest.mark.parametrize(("content", "reason"), [
    ("not json", "not JSON (Expecting value: line 1 column 1 (char 0))"),
    ('{"format": "botsvc-transcript/2", "steps": []}',
     "its format is 'botsvc-transcript/2', not 'botsvc-transcript/1'"),
    ('{"format": "botsvc-transcript/1", "steps": [{"user": {"action": "dance"}}]}',
     "step 1 has no user action of start, stop, block, say, click, send_file"),
])
def test_a_file_that_is_not_a_transcript_is_exit_2_before_anything_starts(
        tmp_path, monkeypatch, content, reason):
    monkeypatch.setenv("BOTSVC_URL", "http://127.0.0.1:9")   # never reached
    monkeypatch.setenv("BOTSVC_ADMIN_TOKEN", "unused")
    bad = tmp_path / "bad.json"
    bad.write_text(content)
    done = run(str(WELCOME), str(bad), "--", "no-such-bot", cwd=tmp_path)
    assert (done.returncode, done.stdout) == (2, "")
    assert done.stderr == f"botsvc: {bad} is not a botsvc-transcript/1 file: {reason}\n"


def test_a_command_that_cannot_start_is_exit_2(on_server, tmp_path):
    done = run(str(WELCOME), "--", "./no-such-bot", "--flag", cwd=tmp_path)
    assert (done.returncode, done.stdout) == (2, "")
    assert done.stderr.splitlines()[-1] == (
        "botsvc: cannot start the bot command './no-such-bot --flag': No such file or"
        " directory: ./no-such-bot")


def test_a_server_out_of_reach_is_exit_2(tmp_path, monkeypatch):
    port = free_port()
    monkeypatch.setenv("BOTSVC_URL", f"http://127.0.0.1:{port}")
    monkeypatch.setenv("BOTSVC_ADMIN_TOKEN", "t")
    done = run(str(WELCOME), "--", *BOT, cwd=tmp_path)
    assert (done.returncode, done.stdout) == (2, "")
    assert done.stderr == (f"botsvc: using the server at http://127.0.0.1:{port}\n"
                           f"botsvc: cannot reach the server at http://127.0.0.1:{port}:"
                           " connection refused: is the server running there?\n")


def test_no_command_is_a_usage_error(tmp_path):
    done = run(str(WELCOME), cwd=tmp_path)
    assert done.returncode == 2
    assert done.stderr.splitlines()[-1] == (
        "Error: the bot's command goes after --: FILE... -- COMMAND [ARG...]")
