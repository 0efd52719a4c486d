"""The pytest plugin (entry point ``pytest11: botsvc``): a real botsvc for
your bot's tests.

Fixtures (all prefixed ``botsvc``, so they never clash with a suite's own):

- ``botsvc_server`` (session): the installation. Started on first use from
  this package (a temporary data dir, a free port, 1 worker, the media tools
  checked when first used, the testing tools on, webhooks allowed to reach
  local receivers; stopped quickly once the session's tests are over), or, when
  ``BOTSVC_URL`` and ``BOTSVC_ADMIN_TOKEN`` are set, that running server
  (which must have BOTSVC_TEST_TOOLS=1 for the tools).
- ``botsvc``: a ``Botsvc`` for the test: ``new_bot()``, ``new_user(bot)``,
  ``calls(bot)`` (what the bot did: its call log), ``advance_clock()``,
  ``inject_fault()``, ``clear_faults()``, ``webhook_deliveries()``,
  ``reset()``, ``operator`` (the typed client).
- ``botsvc_operator``: the operator API client.
- ``botsvc_bot``: a fresh bot (``token``, ``base_url`` for the bot under test).
- ``botsvc_user``: a simulated user of ``botsvc_bot`` (``start()``, ``say()``,
  ``click()``, ``send_file()``, ``chat()``, ``recent()``, ``wait_for_message()``).
- ``botsvc_async``, ``botsvc_async_user``: the same, awaited, for a bot that
  runs in the test's own event loop (pytest-asyncio or anyio): a waiting
  test never holds the loop.
- ``bot_under_test``: your bot, running against ``botsvc_bot``; an exported
  conversation (exportChat) asks for it. The ini key ``botsvc_bot_object``
  names a bot made with botsvc.bot (``package.module:bot``), which it then
  polls in process; otherwise your conftest.py defines it. Under the
  plugin every SDK bot polls at the plugin's pace.
- ``botsvc_reset``: the installation is reset before the test; the marker
  ``@pytest.mark.botsvc_reset`` asks for it too.

A failing test's report carries, as sections, the chat of each user it made
as that user saw it and the failed calls of each bot it made (call log).

Loading the plugin costs nothing: no server starts unless a fixture asks.
"""
from __future__ import annotations

from typing import TYPE_CHECKING

import pytest

if TYPE_CHECKING:   # the harness (and requests) load when a fixture is used
    from botsvc.testkit.aio import AsyncBotsvc, AsyncUser
    from botsvc.testkit.client import OperatorClient
    from botsvc.testkit.harness import Botsvc, SimulatedUser, TestBot

MARKER = "botsvc_reset"
BOT_OBJECT = "botsvc_bot_object"


def pytest_addoption(parser: pytest.Parser) -> None:
    _declare_bot_object(parser)


def _declare_bot_object(parser: pytest.Parser) -> None:
    parser.addini(BOT_OBJECT, "a bot made with botsvc.bot, as package.module:name (imported with"
                  " the ini file's folder on sys.path): the fixture bot_under_test runs it",
                  default="")


def pytest_configure(config: pytest.Config) -> None:
    config.addinivalue_line(
        "markers", f"{MARKER}: reset the botsvc installation before the test")


def pytest_collection_modifyitems(items: list[pytest.Item]) -> None:
    for item in items:
        if item.get_closest_marker(MARKER) is not None:
            fixturenames = getattr(item, "fixturenames", None)
            if fixturenames is not None and MARKER not in fixturenames:
                fixturenames.insert(0, MARKER)   # before any fixture makes a bot


@pytest.fixture(scope="session")
def botsvc_server(tmp_path_factory: pytest.TempPathFactory):
    """The session's installation: ``Botsvc`` for a server started here, or
    for the one BOTSVC_URL and BOTSVC_ADMIN_TOKEN name."""
    from botsvc.config import SettingError, Settings  # lazy: read when a fixture asks
    from botsvc.testkit.harness import Botsvc  # lazy: the plugin loads in every pytest run

    try:   # BOTSVC_URL is a setting like any other: read and checked in one place
        settings = Settings.from_env(secret=False)
    except SettingError as refused:
        raise pytest.UsageError(str(refused)) from None
    _sdk_bots_poll_at_the_suites_pace()
    url, token = settings.url, settings.admin_token
    if url:
        if not token:
            raise pytest.UsageError("BOTSVC_URL is set but BOTSVC_ADMIN_TOKEN is not")
        yield Botsvc(url, token)
        return
    from botsvc.testkit.server import QUICK_ENV, LocalServer  # only when a server is wanted

    server = LocalServer(tmp_path_factory.mktemp("botsvc"), QUICK_ENV)
    server.start()
    try:
        yield Botsvc(server.base_url, server.admin_token)
    finally:
        server.stop(quick=True)   # the session's tests are over: nothing is in flight


def _sdk_bots_poll_at_the_suites_pace() -> None:
    from botsvc.testkit.sdk_bot import poll_at_the_suites_pace  # lazy: loads the SDK

    poll_at_the_suites_pace()


@pytest.fixture
def botsvc(botsvc_server: Botsvc) -> Botsvc:
    """The installation: new_bot(), new_user(bot), calls(bot), advance_clock(),
    inject_fault(), clear_faults(), webhook_deliveries(), reset(), operator."""
    botsvc_server.made_bots.clear()    # this test's own, for its failure report
    botsvc_server.made_users.clear()
    return botsvc_server


@pytest.hookimpl(hookwrapper=True)
def pytest_runtest_makereport(item: pytest.Item, call: pytest.CallInfo):
    """A failing test's report also shows its users' chats and its bots'
    failed calls, read from the server (only when a fixture made them)."""
    outcome = yield
    report = outcome.get_result()
    installation = getattr(item, "funcargs", {}).get("botsvc")
    if report.failed and report.when == "call" and installation is not None:
        from botsvc.testkit.report import failure_sections  # lazy: only on a failure

        report.sections.extend(failure_sections(installation))


@pytest.fixture
def botsvc_operator(botsvc: Botsvc) -> OperatorClient:
    """The operator API's typed client (bots, simulated users, testing tools)."""
    return botsvc.operator


@pytest.fixture
def botsvc_reset(botsvc: Botsvc) -> None:
    """The installation empty again before the test (also: the marker)."""
    botsvc.reset()


@pytest.fixture
def botsvc_bot(botsvc: Botsvc) -> TestBot:
    """A new bot: ``token`` and ``base_url`` for the bot under test, ``api``
    for the test itself."""
    return botsvc.new_bot()


@pytest.fixture
def botsvc_user(botsvc: Botsvc, botsvc_bot: TestBot) -> SimulatedUser:
    """A simulated user of ``botsvc_bot`` (who has not pressed Start yet)."""
    return botsvc.new_user(botsvc_bot)


@pytest.fixture
def botsvc_async(botsvc: Botsvc) -> AsyncBotsvc:
    """``botsvc`` for an async test: the same methods, awaited, none holding
    the event loop (a bot running in it keeps answering)."""
    from botsvc.testkit.aio import AsyncBotsvc  # lazy: only an async test needs it

    return AsyncBotsvc(botsvc)


@pytest.fixture
def botsvc_async_user(botsvc_user: SimulatedUser) -> AsyncUser:
    """``botsvc_user`` for an async test: ``await botsvc_async_user.say(...)``."""
    from botsvc.testkit.aio import AsyncUser  # lazy: only an async test needs it

    return AsyncUser(botsvc_user)


@pytest.fixture
def bot_under_test(request: pytest.FixtureRequest):
    """Your bot, running against ``botsvc_bot`` while a test runs: the bot
    object the ini key ``botsvc_bot_object`` names (made with botsvc.bot),
    or your conftest.py's own fixture of this name. An exported
    conversation asks for it."""
    spec = request.config.getini(BOT_OBJECT)
    if not spec:
        pytest.fail(
            "define a fixture named bot_under_test in your conftest.py: it starts your bot with"
            " botsvc_bot.base_url and botsvc_bot.token (from the fixture botsvc_bot), yields"
            " while the test runs, then stops it. See the botsvc docs, export.md. A bot made"
            f" with botsvc.bot needs none: set {BOT_OBJECT} = package.module:bot in your"
            " pytest.ini (bot-sdk.md).", pytrace=False)
    yield from _bot_object_running(request, spec, request.getfixturevalue("botsvc_bot"))


def _bot_object_running(request: pytest.FixtureRequest, spec: str, bot: TestBot):
    """The SDK bot ``spec`` names, polling against ``bot`` while the test runs."""
    from botsvc.testkit.sdk_bot import running  # lazy: only a suite that names a bot loads the SDK

    folder = request.config.inipath.parent if request.config.inipath else request.config.rootpath
    yield from running(spec, folder, bot)
