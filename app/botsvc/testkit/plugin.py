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
  conversation (exportChat) asks for it. ``botsvc_bot_command`` runs it as a
  process (``bot_process``), ``botsvc_bot_object`` as an SDK bot object
  (botsvc.bot, polled in process), or your conftest.py defines it. Under
  the plugin every SDK bot polls at the plugin's pace.
- ``botsvc_reset``: the installation is reset before the test; the marker
  ``@pytest.mark.botsvc_reset`` asks for it too.

A failing test's report carries, as sections, the chat of each user it made
as that user saw it and the failed calls of each bot it made (call log).

Settings (``options``): each an option, an ini key and a variable, all in
``pytest --help``; read and checked in ``pytest_configure``, so a bad one is
one usage error before any test. The header names the version, the server
and its log.

Loading the plugin costs nothing: no server starts unless a fixture asks.
"""
from __future__ import annotations

from typing import TYPE_CHECKING

import pytest

from botsvc.testkit.options import add_options, read  # the settings: botsvc.config, no more

if TYPE_CHECKING:   # the harness (and requests) load when a fixture is used
    from botsvc.testkit.aio import AsyncBotsvc, AsyncUser
    from botsvc.testkit.client import OperatorClient
    from botsvc.testkit.harness import Botsvc, SimulatedUser, TestBot

MARKER = "botsvc_reset"
SETTINGS_KEY = pytest.StashKey["PluginSettings"]()
KEPT_KEY = pytest.StashKey[str]()
SERVER_DIR = "botsvc"   # under pytest's basetemp; its log is botsvc-server.log beside it


def pytest_addoption(parser: pytest.Parser) -> None:
    add_options(parser)


def pytest_configure(config: pytest.Config) -> None:
    """The plugin's settings, read and checked before any test runs: a bad
    one is one usage error (exit status 4), not a traceback per test."""
    config.addinivalue_line(
        "markers", f"{MARKER}: reset the botsvc installation before the test")
    settings = read(config)
    if settings.url and not settings.admin_token:
        raise pytest.UsageError(f"botsvc: {settings.source('botsvc_url')} is set but"
                                " BOTSVC_ADMIN_TOKEN is not (the server's admin token)")
    config.stash[SETTINGS_KEY] = settings
    if _xdist_controller(config) and not settings.url:
        _check_server_settings()   # its workers collect; an error there is no usage error


def _xdist_controller(config: pytest.Config) -> bool:
    return bool(getattr(config.option, "numprocesses", None)) and not hasattr(config,
                                                                             "workerinput")


def pytest_report_header(config: pytest.Config) -> list[str]:
    """One line: the botsvc version, the server, where its log is."""
    from importlib.metadata import PackageNotFoundError, version

    settings = config.stash[SETTINGS_KEY]
    try:
        line = f"botsvc {version('botsvc')}"
    except PackageNotFoundError:   # a source tree on sys.path, not installed
        line = "botsvc (not installed)"
    if settings.url:
        line += (f", server: {settings.url} (from {settings.source('botsvc_url')};"
                 " its log is that server's own)")
    else:
        address = (f"{settings.bind_host}:{settings.bind_port}" if settings.bind_port
                   else f"{settings.bind_host}, a free port")
        line += f", server: started on first use ({address}), log: {_server_log_shown(config)}"
    if settings.bot_command:
        line += f"; bot_under_test: {' '.join(settings.bot_command)}"
    elif settings.bot_object:
        line += f"; bot_under_test: {settings.bot_object}"
    return [line]


def _server_log_shown(config: pytest.Config) -> str:
    if _xdist_controller(config):   # pytest-xdist: a server per worker
        return f"{config.option.basetemp or '<basetemp>'}/popen-gw*/{SERVER_DIR}-server.log"
    factory = getattr(config, "_tmp_path_factory", None)
    return str(factory.getbasetemp() / f"{SERVER_DIR}-server.log") if factory else "(none)"


def pytest_collection_modifyitems(session: pytest.Session, items: list[pytest.Item]) -> None:
    wanted = False
    for item in items:
        fixturenames = getattr(item, "fixturenames", None) or []
        if item.get_closest_marker(MARKER) is not None and MARKER not in fixturenames:
            fixturenames.insert(0, MARKER)   # before any fixture makes a bot
        wanted = wanted or any(name.startswith("botsvc") or name == "bot_under_test"
                               for name in fixturenames)
    if wanted and not session.config.stash[SETTINGS_KEY].url \
            and not hasattr(session.config, "workerinput"):   # xdist: its controller checked
        _check_server_settings()


def _check_server_settings() -> None:
    """The started server's BOTSVC_* settings, checked before the first test
    (only when a test will ask for the server): a bad one is a usage error."""
    from botsvc.config import SettingError, Settings  # lazy: only when a server is wanted

    try:
        Settings.from_env(secret=False)
    except SettingError as refused:
        raise pytest.UsageError(str(refused)) from None


@pytest.fixture(scope="session")
def botsvc_server(request: pytest.FixtureRequest, tmp_path_factory: pytest.TempPathFactory):
    """The session's installation: ``Botsvc`` for a server started here, or
    for the one ``botsvc_url`` (BOTSVC_URL) and BOTSVC_ADMIN_TOKEN name."""
    from botsvc.testkit.harness import Botsvc  # lazy: the plugin loads in every pytest run
    from botsvc.testkit.sdk_bot import poll_at_the_suites_pace  # lazy: it loads the SDK

    poll_at_the_suites_pace()   # every SDK bot of the session, its own fixtures' too
    settings = request.config.stash[SETTINGS_KEY]
    if settings.url:
        yield Botsvc(settings.url, settings.admin_token)
        return
    from botsvc.testkit.server import QUICK_ENV, LocalServer  # only when a server is wanted

    server = LocalServer(tmp_path_factory.getbasetemp() / SERVER_DIR, QUICK_ENV,
                         host=settings.bind_host, port=settings.bind_port)
    server.start()
    try:
        yield Botsvc(server.base_url, server.admin_token)
    finally:
        server.stop(quick=True)   # the session's tests are over: nothing is in flight
        _keep_or_remove(request, server, settings.keep)


def _keep_or_remove(request: pytest.FixtureRequest, server, keep: str) -> None:
    """The started server's data dir and log: kept (and said so in the
    summary) as ``botsvc_keep`` says, else removed."""
    import shutil

    failed = request.session.testsfailed > 0
    if keep == "always" or (keep == "failed" and failed):
        request.config.stash[KEPT_KEY] = f"{server.data_dir} and {server.log_path}"
        return
    shutil.rmtree(server.data_dir, ignore_errors=True)
    server.log_path.unlink(missing_ok=True)


def pytest_terminal_summary(terminalreporter, config: pytest.Config) -> None:
    kept = config.stash.get(KEPT_KEY, None)
    if kept:
        terminalreporter.write_line(f"botsvc: the started server's data dir and log are kept:"
                                    f" {kept}")


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
    # The bot under test's own section (a process: what it printed).
    section = getattr(getattr(item, "funcargs", {}).get("bot_under_test"), "report_section", None)
    if report.failed and report.when == "call" and callable(section):
        report.sections.append(section())


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
    """Your bot, running against ``botsvc_bot`` while a test runs: the
    process ``botsvc_bot_command`` names, the SDK object ``botsvc_bot_object``
    names, or your conftest.py's own fixture of this name. An exported
    conversation asks for it."""
    settings = request.config.stash[SETTINGS_KEY]   # no server starts unless one is set
    if settings.bot_command or settings.bot_object:
        from botsvc.testkit import bot_under_test as running  # lazy: only when one is set

        yield from running.for_one_test(request, settings, request.getfixturevalue("botsvc_bot"))
    else:
        pytest.fail(_NO_BOT_UNDER_TEST, pytrace=False)


_NO_BOT_UNDER_TEST = (
    "bot_under_test: set botsvc_bot_command (your bot as a process, e.g."
    " 'botsvc_bot_command = node bot.js' in pytest.ini) or botsvc_bot_object (a bot"
    " object of the botsvc SDK), or define a fixture named bot_under_test in your"
    " conftest.py: it starts your bot with botsvc_bot.base_url and botsvc_bot.token"
    " (from the fixture botsvc_bot), yields while the test runs, then stops it. See the"
    " botsvc docs, export.md.")


@pytest.hookimpl(tryfirst=True)
def pytest_runtest_setup(item: pytest.Item) -> None:
    """A test that asks for this plugin's own ``bot_under_test`` while no bot
    is set fails here, before its fixtures: pytest sets up the session's
    fixtures first, so the server started (seconds) for a test that could
    not run."""
    fixtures = getattr(item, "_fixtureinfo", None)
    chosen = fixtures.name2fixturedefs.get("bot_under_test") if fixtures else None
    settings = item.config.stash[SETTINGS_KEY]
    if chosen and getattr(chosen[-1].func, "__module__", None) == __name__ \
            and not (settings.bot_command or settings.bot_object):
        pytest.fail(_NO_BOT_UNDER_TEST, pytrace=False)
