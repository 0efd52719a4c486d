"""The plugin's settings as pytest users expect them: each an option, an
ini key and a variable, listed in ``pytest --help``; a bad one is one usage
error (exit status 4) before any test runs; the header names the version,
the server and its log; a helper's timeout points at the test's line; a
server without the testing tools says which setting is missing."""
from __future__ import annotations

import json
import re
import subprocess

import pytest

from botsvc.devkit.paths import REPO
from botsvc.devkit.servers import running_server
from botsvc.testkit.options import SETTINGS

USAGE_ERROR = pytest.ExitCode.USAGE_ERROR


def test_every_setting_is_in_pytest_help(pytester):
    """In a project of its own, as a user runs it (in process: a subprocess
    of the suite's pytest --help loaded the suite's conftest, 2 s)."""
    help_run = pytester.runpytest_inprocess("--help")
    assert help_run.ret == pytest.ExitCode.OK
    shown = help_run.stdout.str()
    assert "botsvc (a real bot messaging server for your bot's tests):" in shown
    for setting in SETTINGS:
        assert f"{setting.flag}=" in shown, setting.flag
        assert f"  {setting.ini} (string):" in shown, setting.ini
        assert setting.env in shown, setting.env
    assert {s.ini for s in SETTINGS} == {"botsvc_url", "botsvc_bind", "botsvc_keep",
                                         "botsvc_bot_command", "botsvc_bot_object"}


@pytest.mark.parametrize(("where", "value", "message"), [
    ("--botsvc-bind", "localhost", "botsvc: --botsvc-bind must be HOST:PORT (port 1 to 65535),"
                                   " got 'localhost'"),
    ("--botsvc-bind", "127.0.0.1:65536", "botsvc: --botsvc-bind must be HOST:PORT*"),
    ("botsvc_keep", "sometimes", "botsvc: botsvc_keep (ini) must be one of failed, always,"
                                 " never, got 'sometimes'"),
    ("BOTSVC_BOT_COMMAND", "node 'bot.js", "botsvc: BOTSVC_BOT_COMMAND is not a command line"
                                           " (No closing quotation): \"node 'bot.js\""),
    ("BOTSVC_BOT_OBJECT", "mybot", "botsvc: BOTSVC_BOT_OBJECT must be MODULE:NAME*"),
    ("--botsvc-url", "ftp://example", "botsvc: --botsvc-url must be an http or https URL*"),
])
def test_a_bad_setting_is_one_usage_error_before_any_test(pytester, monkeypatch, where, value,
                                                          message):
    args = ["-p", "no:cacheprovider"]
    if where.startswith("--"):
        args.append(f"{where}={value}")
    elif where.isupper():
        monkeypatch.setenv(where, value)
    else:
        pytester.makeini(f"[pytest]\n{where} = {value}\n")
    pytester.makepyfile("def test_one(botsvc):\n    raise AssertionError('ran')\n"
                        "def test_two(botsvc):\n    raise AssertionError('ran')\n")
    result = pytester.runpytest_inprocess(*args)
    assert result.ret == USAGE_ERROR
    result.stderr.fnmatch_lines([f"ERROR: {message}"])
    assert "ran" not in result.stdout.str() and "Traceback" not in result.stderr.str()


def test_both_a_command_and_an_object_is_a_usage_error(pytester):
    pytester.makeini("[pytest]\nbotsvc_bot_command = node bot.js\n")
    result = pytester.runpytest_inprocess("-p", "no:cacheprovider",
                                          "--botsvc-bot-object=mybot:bot")
    assert result.ret == USAGE_ERROR
    result.stderr.fnmatch_lines(["ERROR: botsvc: botsvc_bot_command (ini) and"
                                 " --botsvc-bot-object are both set: *"])


def test_a_bad_server_setting_is_a_usage_error_only_when_a_test_wants_the_server(
        pytester, monkeypatch):
    monkeypatch.delenv("BOTSVC_URL", raising=False)
    monkeypatch.setenv("BOTSVC_WORKERS", "many")
    pytester.makepyfile(test_plain="def test_plain():\n    pass\n")
    pytester.runpytest_inprocess("-p", "no:cacheprovider").assert_outcomes(passed=1)
    pytester.makepyfile(test_botsvc="def test_it(botsvc_bot):\n    pass\n")
    result = pytester.runpytest_inprocess("-p", "no:cacheprovider")
    assert result.ret == USAGE_ERROR
    result.stderr.fnmatch_lines(["ERROR: botsvc: BOTSVC_WORKERS must be an integer, got 'many'"])


def test_under_xdist_a_bad_server_setting_is_one_usage_error_too(pytester, monkeypatch):
    """Its workers collect, where an error is a crash of the worker: the
    controller checks before it starts them."""
    monkeypatch.delenv("BOTSVC_URL", raising=False)
    monkeypatch.setenv("BOTSVC_WORKERS", "many")
    pytester.makepyfile("def test_it(botsvc_bot):\n    pass\n")
    result = pytester.runpytest_inprocess("-p", "no:cacheprovider", "-n", "2")
    assert result.ret == USAGE_ERROR
    result.stderr.fnmatch_lines(["ERROR: botsvc: BOTSVC_WORKERS must be an integer, got 'many'"])


def test_the_option_wins_over_the_ini_key_which_wins_over_the_variable(pytester, monkeypatch):
    monkeypatch.setenv("BOTSVC_URL", "http://127.0.0.1:3")
    monkeypatch.setenv("BOTSVC_ADMIN_TOKEN", "t")
    pytester.makeini("[pytest]\nbotsvc_url = http://127.0.0.1:2\n")
    header = pytester.runpytest_inprocess("-p", "no:cacheprovider")
    header.stdout.fnmatch_lines(["botsvc *, server: http://127.0.0.1:2 (from botsvc_url (ini);"
                                 " its log is that server's own)"])
    header = pytester.runpytest_inprocess("-p", "no:cacheprovider",
                                          "--botsvc-url=http://127.0.0.1:1")
    header.stdout.fnmatch_lines(["botsvc *, server: http://127.0.0.1:1 (from --botsvc-url;*"])


@pytest.fixture(scope="module")
def toolless_server(tmp_path_factory):
    with running_server(tmp_path_factory.mktemp("toolless"), BOTSVC_TEST_TOOLS=0) as server:
        yield server


@pytest.mark.server
def test_a_server_without_the_testing_tools_says_which_setting(pytester, monkeypatch,
                                                                toolless_server):
    monkeypatch.setenv("BOTSVC_URL", toolless_server.base_url)
    monkeypatch.setenv("BOTSVC_ADMIN_TOKEN", toolless_server.admin_token)
    pytester.makepyfile("""
        from botsvc.testkit.client import BotsvcError

        def test_the_clock(botsvc):
            botsvc.advance_clock(60)

        def test_the_404_stays(botsvc):
            try:
                botsvc.reset()
            except BotsvcError as failure:
                assert (failure.http_status, failure.error_code) == (404, "METHOD_NOT_FOUND")
                assert failure.description == "Not found"
    """)
    result = pytester.runpytest_inprocess("-p", "no:cacheprovider")
    result.assert_outcomes(passed=1, failed=1)
    result.stdout.fnmatch_lines([
        "*botsvc.advance_clock(60)",
        "E * METHOD_NOT_FOUND (404): Not found",
        "E * advanceClock: the server at * has no such operator method. The testing tools *"
        " exist only on a server started with BOTSVC_TEST_TOOLS=1*"])


@pytest.mark.server
def test_a_wait_timeout_points_at_the_tests_line(pytester, monkeypatch, toolless_server):
    monkeypatch.setenv("BOTSVC_URL", toolless_server.base_url)
    monkeypatch.setenv("BOTSVC_ADMIN_TOKEN", toolless_server.admin_token)
    pytester.makepyfile("""
        def test_waits(botsvc_user):
            botsvc_user.start()
            botsvc_user.wait_for_message("hello", timeout=0.2)   # the test's own line
    """)
    result = pytester.runpytest_inprocess("-p", "no:cacheprovider")
    result.assert_outcomes(failed=1)
    out = result.stdout.str()
    assert "botsvc_user.wait_for_message(\"hello\", timeout=0.2)   # the test's own line" in out
    result.stdout.fnmatch_lines(["E * AssertionError: the bot sent no matching message within 0.2 s*"])
    assert "def wait_for_message" not in out and "harness.py:" not in out, out


@pytest.mark.server
def test_the_readmes_curl_example_names_the_setting_it_needs(toolless_server, tmp_path):
    """The README's testing-tools curl line, as written, on a server without
    the tools: the contract's 404, which the line's own comment explains."""
    readme = (REPO / "README.md").read_text(encoding="utf-8")
    (block,) = [b for b in re.findall(r"^```sh\n(.*?)^```$", readme, re.MULTILINE | re.DOTALL)
                if "/manage/v1/advanceClock" in b]
    assert "# 404 without BOTSVC_TEST_TOOLS=1" in block
    done = subprocess.run(["bash", "-c", block.replace("127.0.0.1:8080", toolless_server.base_url
                                                       .removeprefix("http://"))],
                          env={"PATH": "/usr/bin:/bin",
                               "BOTSVC_ADMIN_TOKEN": toolless_server.admin_token},
                          capture_output=True, text=True, timeout=30, check=True)
    answer = json.loads(done.stdout)
    assert (answer["ok"], answer["error_code"]) == (False, "METHOD_NOT_FOUND")
