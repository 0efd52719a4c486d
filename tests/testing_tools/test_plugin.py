"""The pytest plugin, run by pytest's own pytester: its fixtures against a
real server (the one BOTSVC_URL names, or one it starts itself), the reset
marker, and nothing started when nothing asks."""
from __future__ import annotations

import socket
from importlib.metadata import version
from pathlib import Path

import pytest

from botsvc.devkit.servers import running_server
from botsvc.testkit.server import LocalServer

pytestmark = pytest.mark.server


@pytest.fixture(scope="module")
def server(tmp_path_factory):
    with running_server(tmp_path_factory.mktemp("plugin"), BOTSVC_TEST_TOOLS=1,
                        BOTSVC_WEBHOOK_ALLOW_PRIVATE=1) as server:
        yield server


@pytest.fixture
def given_server(server, monkeypatch):
    """Inner sessions use the module's server, as BOTSVC_URL tells them to."""
    monkeypatch.setenv("BOTSVC_URL", server.base_url)
    monkeypatch.setenv("BOTSVC_ADMIN_TOKEN", server.admin_token)
    return server


@pytest.fixture
def no_server_start(monkeypatch):
    def refuse(self):
        raise AssertionError("the plugin started a server")
    monkeypatch.setattr(LocalServer, "start", refuse)


def test_loading_the_plugin_starts_nothing(pytester, no_server_start, monkeypatch):
    monkeypatch.delenv("BOTSVC_URL", raising=False)
    pytester.makepyfile("def test_plain():\n    assert True\n")
    pytester.runpytest_inprocess("-p", "no:cacheprovider").assert_outcomes(passed=1)


# A suite's own conftest, beside the plugin's fixtures.
THEIR_CONFTEST = """
import pytest

# The names a suite is likely to use itself: no clash with the plugin.
@pytest.fixture
def app(): return "theirs"
@pytest.fixture
def client(): return "theirs"
@pytest.fixture
def operator(): return "theirs"
@pytest.fixture
def bot(): return "theirs"
@pytest.fixture
def chat(): return "theirs"
"""
# A bot's suite, run against the given server: every fixture and helper in use.
THEIR_SUITE = """
import pytest
from botsvc.testkit.client import BotsvcError

def test_a_user_talks_to_the_bot(botsvc_bot, botsvc_user, bot, operator, tmp_path):
    assert bot == operator == "theirs"
    assert botsvc_bot.api.get_me()["id"] == botsvc_bot.id
    chat_id = botsvc_user.start("from_test")
    botsvc_user.say("hello")
    [start, hello] = botsvc_bot.api.get_updates()
    assert start["membership"] == {"chat_id": chat_id, "status": "active",
                                   "start_parameter": "from_test"}
    assert hello["message"]["text"] == "hello"
    sent = botsvc_bot.api.send_message(chat_id, "pick one", reply_markup={
        "inline_keyboard": [[{"text": "A", "callback_data": "a"}]]})
    assert botsvc_user.wait_for_message("pick one")["message_id"] == sent["message_id"]
    query_id = botsvc_user.click(sent, "a")
    updates = botsvc_bot.api.get_updates(offset=hello["update_id"] + 1)
    assert updates[0]["callback_query"]["id"] == query_id
    notes = tmp_path / "notes.txt"
    notes.write_text("some notes")
    assert botsvc_user.send_file(notes)["media"]["kind"] == "document"
    assert [m["text"] for m in botsvc_user.chat()["messages"] if "text" in m] == [
        "/start from_test", "hello", "pick one"]

def test_a_chat_read_page_by_page(botsvc_bot, botsvc_user):
    chat_id = botsvc_user.start()
    sent = [botsvc_bot.api.send_message(chat_id, f"m{i}", reply_markup={
        "inline_keyboard": [[{"text": "A", "callback_data": "a"}]]}) for i in range(5)]
    for message in sent[:2]:
        botsvc_bot.api.answer_callback_query(botsvc_user.click(message, "a"),
                                             text=message["text"])
    botsvc_user.page_limit = 2        # five messages and /start: three pages
    chat = botsvc_user.chat()
    assert [m["text"] for m in chat["messages"]] == ["/start", "m0", "m1", "m2", "m3",
                                                     "m4"]
    assert [a["text"] for a in chat["callback_answers"]] == ["m0", "m1"]
    assert [m["text"] for m in botsvc_user.recent(sent[2]["message_id"])] == ["m3", "m4"]
    assert botsvc_user.wait_for_message("m4")["message_id"] == sent[4]["message_id"]
    page = botsvc_user.operator.user_get_chat(botsvc_user.user_id, botsvc_bot.id,
                                              limit=1)
    assert [m["text"] for m in page["messages"]] == ["m4"] and page["has_more"] is True

def test_wait_for_message_says_what_it_saw(botsvc_bot, botsvc_user):
    chat_id = botsvc_user.start()
    botsvc_bot.api.send_message(chat_id, "something else")
    with pytest.raises(AssertionError, match="something else"):
        botsvc_user.wait_for_message("the answer", timeout=0.3)

def test_the_clock_and_faults(botsvc, botsvc_bot):
    before = botsvc.clock()
    assert botsvc.advance_clock(60).offset == before.offset + 60
    botsvc.inject_fault(botsvc_bot, "getMe", error_code="RATE_LIMITED", count=1)
    with pytest.raises(BotsvcError) as limited:
        botsvc_bot.api.get_me()
    error = limited.value
    assert (error.http_status, error.error_code, error.retry_after) == (
        429, "RATE_LIMITED", 1)
    assert error.parameters == {"injected": True, "retry_after": 1}
    assert error.headers["Retry-After"] == "1"
    assert botsvc_bot.api.get_me()
    assert botsvc.webhook_deliveries(botsvc_bot) == []

def test_what_the_bot_did(botsvc, botsvc_bot, botsvc_user):
    chat_id = botsvc_user.start()
    botsvc_bot.api.send_message(chat_id, "one")
    with pytest.raises(BotsvcError):
        botsvc_bot.api.send_message("vc_" + "0" * 40, "two")
    sent = botsvc.wait_for_call(botsvc_bot, "sendMessage")
    assert sent["ok"] and sent["params"] == {"chat_id": chat_id, "text": "one"}
    failed = botsvc.wait_for_call(botsvc_bot, match=lambda call: not call["ok"])
    assert (failed["error_code"], failed["params"]["text"]) == ("CHAT_NOT_FOUND", "two")
    assert [c["call_id"] for c in botsvc.calls(botsvc_bot)] == [
        failed["call_id"], sent["call_id"]]
    assert botsvc.calls(botsvc_bot, failures_only=True) == [failed]
    assert botsvc.calls(botsvc_bot, "getMe") == []
    with pytest.raises(AssertionError, match="no matching call"):
        botsvc.wait_for_call(botsvc_bot, "sendMessage", timeout=0.3)

def test_made_by_an_earlier_test(botsvc_bot):
    pass

@pytest.mark.botsvc_reset
def test_the_marker_resets_first(botsvc, botsvc_bot):
    assert [b["id"] for b in botsvc.operator.list_bots()] == [botsvc_bot.id]
    assert botsvc.clock().offset == 0

def test_the_fixture_resets_too(botsvc_reset, botsvc_operator):
    assert botsvc_operator.list_bots() == []
"""


def test_fixtures_and_helpers_against_a_given_server(pytester, given_server, no_server_start):
    pytester.makeconftest(THEIR_CONFTEST)
    pytester.makepyfile(THEIR_SUITE)
    result = pytester.runpytest_inprocess("-p", "no:cacheprovider", "--strict-markers")
    result.assert_outcomes(passed=8)


def test_a_failing_tests_report_holds_the_chat_and_the_failed_calls(pytester, given_server,
                                                                   no_server_start):
    pytester.makepyfile("""
        import pytest
        from botsvc.testkit.client import BotsvcError

        def test_the_bot_fails(botsvc, botsvc_bot, botsvc_user):
            chat_id = botsvc_user.start()
            botsvc_user.say("what time is it?")
            botsvc_bot.api.send_message(chat_id, "it is noon")
            with pytest.raises(BotsvcError):
                botsvc_bot.api.send_message("999999999", "lost answer")
            botsvc.wait_for_call(botsvc_bot, match=lambda c: "error_code" in c)
            assert False, "the bot did not say the time right"

        def test_a_passing_test_has_no_sections(botsvc_bot, botsvc_user):
            botsvc_user.start()
    """)
    result = pytester.runpytest_inprocess("-p", "no:cacheprovider", "-rA")
    result.assert_outcomes(passed=1, failed=1)
    result.stdout.fnmatch_lines([
        "*botsvc: user *'s chat with @*",
        "(chat *, *)",
        "user #*: /start*", "user #*: what time is it?", "bot  #*: it is noon",
        "*botsvc: failed calls of @*, oldest first*",
        'sendMessage -> CHAT_NOT_FOUND: *"lost answer"*'])
    assert result.stdout.str().count("botsvc: user ") == 1   # the failing test's report only


def test_an_async_bot_in_the_tests_own_loop_answers_an_awaited_wait(pytester, given_server,
                                                                    no_server_start):
    """The bot is an asyncio task of the test's loop: the test's awaited waits
    must leave the loop free for it (a blocking wait would time out)."""
    pytester.makepyfile("""
        import asyncio
        import pytest
        import requests

        pytestmark = pytest.mark.anyio

        @pytest.fixture
        def anyio_backend():
            return "asyncio"

        async def echo_bot(base_url, token, stop):
            session = requests.Session()
            session.headers["Authorization"] = f"Bearer {token}"

            def call(method, **params):
                return session.post(f"{base_url}/v2/{method}", json=params).json()["result"]

            offset = 0
            while not stop.is_set():
                for update in await asyncio.to_thread(call, "getUpdates", offset=offset):
                    offset = update["update_id"] + 1
                    text = update.get("message", {}).get("text", "/")
                    if not text.startswith("/"):
                        await asyncio.to_thread(call, "sendMessage", text=text.upper(),
                                                chat_id=update["message"]["chat"]["id"])
                await asyncio.sleep(0.01)

        async def test_the_bot_answers(botsvc_async, botsvc_bot, botsvc_async_user):
            stop = asyncio.Event()
            bot = asyncio.create_task(echo_bot(botsvc_bot.base_url, botsvc_bot.token, stop))
            await botsvc_async_user.start()
            await botsvc_async_user.say("hello")
            assert (await botsvc_async_user.wait_for_message("HELLO", timeout=5))["text"] == "HELLO"
            call = await botsvc_async.wait_for_call(botsvc_bot, "sendMessage", timeout=5)
            assert call["params"]["text"] == "HELLO"
            more = await botsvc_async.new_user(botsvc_bot)
            await more.start()
            await more.say("again")
            assert (await more.wait_for_message(timeout=5))["text"] == "AGAIN"
            stop.set()
            await bot
    """)
    result = pytester.runpytest_inprocess("-p", "no:cacheprovider", "-p", "anyio")
    result.assert_outcomes(passed=1)


def test_the_plugin_starts_and_stops_its_own_server(pytester, monkeypatch, tmp_path):
    monkeypatch.delenv("BOTSVC_URL", raising=False)
    port_file, temp_file = tmp_path / "port", tmp_path / "basetemp"
    pytester.makepyfile(f"""
        from urllib.parse import urlsplit

        def test_own_server(botsvc, botsvc_bot, tmp_path_factory):
            assert botsvc_bot.api.get_me()["username"] == botsvc_bot.username
            assert botsvc.advance_clock(5).offset == 5       # the testing tools are on
            with open({str(port_file)!r}, "w") as fh:
                fh.write(str(urlsplit(botsvc.base_url).port))
            with open({str(temp_file)!r}, "w") as fh:
                fh.write(str(tmp_path_factory.getbasetemp()))
    """)
    result = pytester.runpytest_subprocess("-p", "no:cacheprovider", "--botsvc-keep=always")
    result.assert_outcomes(passed=1)
    port = int(port_file.read_text())
    with pytest.raises(OSError), socket.create_connection(("127.0.0.1", port), timeout=2):
        pass   # gone with the session
    # The quick test server: one worker, no media check at start, and
    # gunicorn's quick stop (the master is SIGKILLed once it has reaped its
    # worker: what it had left to do was log its last line).
    (log_path,) = Path(temp_file.read_text()).glob("botsvc*-server.log")
    log = log_path.read_text()
    assert log.count("Booting worker") == 1
    assert "media tools not checked at start (BOTSVC_MEDIA_CHECK=lazy)" in log
    assert "Handling signal: int" in log
    # The header names the log before the tests; the summary says it was kept.
    result.stdout.fnmatch_lines([f"botsvc {version('botsvc')}, server: started on first use"
                                 f" (127.0.0.1, a free port), log: {log_path}",
                                 "botsvc: the started server's data dir and log are kept: *"])


def test_a_url_without_the_admin_token_is_a_usage_error(pytester, monkeypatch):
    monkeypatch.setenv("BOTSVC_URL", "http://127.0.0.1:9")
    monkeypatch.delenv("BOTSVC_ADMIN_TOKEN", raising=False)
    pytester.makepyfile("def test_it(botsvc):\n    pass\n")
    result = pytester.runpytest_inprocess("-p", "no:cacheprovider")
    assert result.ret == pytest.ExitCode.USAGE_ERROR
    result.stderr.fnmatch_lines(["ERROR: botsvc: BOTSVC_URL is set but BOTSVC_ADMIN_TOKEN is not*"])
