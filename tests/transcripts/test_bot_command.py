"""``botsvc_bot_command``: an exported module runs as it was downloaded, with
no conftest.py, against a bot that is its own process; the process is
stopped after each test, and one that exits fails the step with its exit
status and last lines."""
from __future__ import annotations

import shutil
import sys
from pathlib import Path

import pytest

from botsvc.devkit.servers import running_server
from tests.support.welcome_chat import export_welcome_chat

pytestmark = pytest.mark.server
BOT = Path(__file__).parent / "process_bot.py"


@pytest.fixture(scope="module")
def server(tmp_path_factory):
    with running_server(tmp_path_factory.mktemp("bot-command"), BOTSVC_TEST_TOOLS=1) as server:
        yield server


@pytest.fixture(scope="module")
def exported(server, tmp_path_factory) -> str:
    """A real conversation with the process bot, exported as a pytest module."""
    return export_welcome_chat(server, [sys.executable, str(BOT)],
                               tmp_path_factory.mktemp("out") / "bot.log")


def run_exported(pytester, server, exported, command: str):
    assert not (pytester.path / "conftest.py").exists()
    pytester.makepyfile(test_welcome=exported)
    shutil.copy(BOT, pytester.path / "process_bot.py")
    pytester.makeini(f"[pytest]\nbotsvc_bot_command = {sys.executable} process_bot.py"
                     f" {command}\n")
    return pytester.runpytest_inprocess("-p", "no:cacheprovider", "-rA",
                                         f"--botsvc-url={server.base_url}")


@pytest.fixture
def admin_token(server, monkeypatch):
    monkeypatch.setenv("BOTSVC_ADMIN_TOKEN", server.admin_token)


def test_an_exported_module_runs_as_downloaded(pytester, server, exported, admin_token):
    result = run_exported(pytester, server, exported, "")
    result.assert_outcomes(passed=1)
    result.stdout.fnmatch_lines([f"botsvc *, server: {server.base_url} (from --botsvc-url;*;"
                                 f" bot_under_test: {sys.executable} process_bot.py"])


def test_a_bot_that_differs_fails_with_what_it_printed(pytester, server, exported, admin_token):
    result = run_exported(pytester, server, exported, "--shout")
    result.assert_outcomes(failed=1)
    result.stdout.fnmatch_lines([
        "E * step 2 (user.say('hello')), reaction 1:",
        "E *   expected: the bot sent a message: type='text', text='You said: hello'",
        "E *   actual:   the bot sent a message: type='text', text='You said: HELLO'",
        f"*botsvc: what the bot under test printed ({sys.executable} process_bot.py --shout)*",
        "process bot polling http://127.0.0.1:*"])


def test_a_bot_that_exits_fails_the_step_with_its_status(pytester, server, exported,
                                                         admin_token):
    result = run_exported(pytester, server, exported, "--exit-on hello")
    result.assert_outcomes(failed=1)
    result.stdout.fnmatch_lines([
        "E * step 2 (user.say('hello')), reaction 1: the bot under test (*process_bot.py"
        " --exit-on hello) exited with status 3; its last lines:",
        "E *  | process bot polling *",
        "E *  | giving up on 'hello'"])


def test_a_command_that_cannot_start_fails_the_test_in_one_line(pytester, server, admin_token):
    pytester.makepyfile("def test_it(bot_under_test):\n    pass\n")
    result = pytester.runpytest_inprocess("-p", "no:cacheprovider",
                                           f"--botsvc-url={server.base_url}",
                                           "--botsvc-bot-command=./no-such-bot --verbose")
    result.assert_outcomes(errors=1)
    result.stdout.fnmatch_lines(["*--botsvc-bot-command: cannot start the bot command"
                                 " './no-such-bot --verbose': No such file or directory:"
                                 " ./no-such-bot"])


def test_the_bot_runs_in_the_rootdir_with_its_two_variables(pytester, server, admin_token):
    pytester.makepyfile(show_env="""
        import os, time
        with open("seen.txt", "w") as f:
            f.write(os.environ["BOTSVC_BASE_URL"] + " " + os.environ["BOTSVC_BOT_TOKEN"])
        time.sleep(60)
    """)
    pytester.makepyfile(test_it="""
        import time
        def test_it(bot_under_test, botsvc_bot):
            deadline = time.monotonic() + 30
            while time.monotonic() < deadline:
                try:
                    seen = open("seen.txt").read()
                    break
                except OSError:
                    time.sleep(0.05)
            assert seen == f"{botsvc_bot.base_url} {botsvc_bot.token}"
            assert bot_under_test.exit_status() is None
    """)
    (pytester.path / "sub").mkdir()
    result = pytester.runpytest_inprocess(
        "-p", "no:cacheprovider", f"--botsvc-url={server.base_url}", "--rootdir", ".",
        f"--botsvc-bot-command={sys.executable} show_env.py", "sub/../test_it.py")
    result.assert_outcomes(passed=1)
