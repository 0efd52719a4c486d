"""Shared fixtures: the real app on a temporary SQLite file.

Rate limits are off unless a test turns them on (``make_app(rate_api_per_sec=...)``),
so that tests which make many calls measure behaviour, not timing; so is the
bot's call log unless a test carries the ``call_log`` marker (as the call
log's and the sandbox's tests do): a lone call's record is a transaction of
its own, a third of an in-process call's time.

A test that starts a real server or a browser must carry the ``server`` or
``browser`` marker (``scripts/test --fast`` leaves those out): one that does
not is refused at the start of the server or browser, with its name.
"""
from __future__ import annotations

import contextlib
import itertools
import os
import shutil
import tempfile
from collections.abc import Iterator
from pathlib import Path
from types import SimpleNamespace

import pytest
from selenium import webdriver

from botsvc.config import DATABASE_FILE, Settings
from botsvc.db import checkpoint, connect
from botsvc.factory import create_app
from botsvc.media import build_test_signature_db
from botsvc.migrations import migrate
from botsvc.testkit.server import LocalServer
from tests.support.built_once import built_once
from tests.support.clamd import running_clamd, scanning_socket
from tests.support.conformance import ConformingClient
from tests.support.contract import ADMIN_TOKEN, NO_RATE_LIMITS, BotClient, Operator

pytest_plugins = ["pytester"]   # the testing kit's plugin is tested with it
_names = itertools.count(1)


_running: dict[str, pytest.Item] = {}


@pytest.hookimpl(tryfirst=True)
def pytest_configure(config: pytest.Config) -> None:
    """Temporary files in memory where the machine has /dev/shm: every test
    makes a real SQLite database, and on a disk the fsyncs of its migration
    and checkpoint were most of an in-process test's time (103 ms against
    40 ms to create an app, measured). --basetemp still chooses."""
    if config.option.basetemp is None and os.access("/dev/shm", os.W_OK) \
            and not hasattr(config, "workerinput"):   # xdist workers share the controller's
        config.option.basetemp = tempfile.mkdtemp(prefix="botsvc-tests-", dir="/dev/shm")
        config.add_cleanup(lambda: shutil.rmtree(config.option.basetemp, ignore_errors=True))


@pytest.hookimpl(tryfirst=True)
def pytest_runtest_setup(item: pytest.Item) -> None:
    _running["item"] = item   # before its fixtures, module-scoped ones included


@pytest.fixture(scope="session", autouse=True)
def _slow_parts_only_where_marked():
    """Keeps the markers honest, so the fast lane stays fast: starting a real
    server or a browser from a test without its marker fails that test."""
    def guarded(original, marker: str, what: str):
        def start(*args, **kwargs):
            item = _running.get("item")
            if item is not None and item.get_closest_marker(marker) is None:
                raise RuntimeError(f"{item.nodeid} {what}: mark it @pytest.mark.{marker}")
            return original(*args, **kwargs)
        return start

    with pytest.MonkeyPatch.context() as patch:
        patch.setattr(LocalServer, "start", guarded(LocalServer.start, "server",
                                                    "starts a real server"))
        patch.setattr(webdriver, "Chrome", guarded(webdriver.Chrome, "browser",
                                                   "starts a browser"))
        yield


@pytest.fixture
def scanner_settings() -> dict:
    """Settings overrides for the virus scanner (the media tests' conftest
    points it at the offline EICAR database); none here."""
    return {}


@pytest.fixture
def pytester(pytester, monkeypatch):
    """Runs of the testing kit's plugin leave out the fuzzer's pytest plugins,
    as setup.cfg does for the suite (a pytester run reads its own ini, not
    ours). An in-process run gives back the modules it imported, so each one
    imported hypothesis and schemathesis again: 2 s of a run of two tiny
    tests, where the run of the plugin under test takes 0.2 s."""
    monkeypatch.setenv("PYTEST_ADDOPTS", "-p no:schemathesis -p no:hypothesispytest")
    return pytester


@pytest.fixture(scope="session", autouse=True)
def _routes_and_templates_built_once():
    """The apps' URL rules and pages, parsed and compiled once per process
    (tests/support/built_once.py, which says what each saves)."""
    with built_once():
        yield


@pytest.fixture(scope="session")
def offline_signature_db(tmp_path_factory) -> str:
    """The EICAR-only signature database, built once per session: this
    machine may have no official one, and no test may need the network."""
    return build_test_signature_db(str(tmp_path_factory.mktemp("clamdb")))


@pytest.fixture(scope="session")
def suite_clamd(tmp_path_factory, offline_signature_db) -> Iterator[str]:
    """A real clamd with the offline database, once per test process
    (tests/support/clamd.py says why); StreamMaxLength above the upload
    ceiling, as an operator must set it."""
    with running_clamd(tmp_path_factory.mktemp("suite-clamd"), offline_signature_db,
                       "200M") as sock:
        yield sock


@pytest.fixture
def offline_scanner(request, suite_clamd, offline_signature_db) -> dict:
    """Settings that scan uploads with the offline database, through the
    suite's clamd, or with clamscan for a test marked ``clamscan``: what a
    module that uploads returns from its ``scanner_settings``."""
    return {"clamav_db": offline_signature_db,
            "clamd_socket": scanning_socket(request, suite_clamd)}


@pytest.fixture
def call_log_settings(request) -> dict:
    """The call log is off for the suite's apps, unless the test carries the
    ``call_log`` marker (on, as an installation has it)."""
    return {} if request.node.get_closest_marker("call_log") else {"call_log": False}


@pytest.fixture(scope="session")
def migrated_database(tmp_path_factory) -> Path:
    """A database with every migration applied, made once per session: a test's
    app starts from a copy (its own real file), and create_app's migration
    finds nothing left to do. Applying the migrations took a quarter of an
    in-process test's set-up."""
    path = tmp_path_factory.mktemp("template") / DATABASE_FILE
    migrate(str(path))
    with contextlib.closing(connect(str(path))) as conn:
        checkpoint(conn)
    return path


def _new_app(migrated_database: Path, **values):
    """The app on ``data_dir`` (a copy of the migrated template unless it has
    a database), with the suite's admin token and no rate limits."""
    values = dict(admin_token=ADMIN_TOKEN, **NO_RATE_LIMITS) | values
    database = Path(values["data_dir"]) / DATABASE_FILE
    if not database.exists():
        database.parent.mkdir(mode=0o700, parents=True, exist_ok=True)
        shutil.copyfile(migrated_database, database)
    app = create_app(Settings.from_env({}, **values))
    app.test_client_class = ConformingClient   # every answer checked against the document
    return app


@pytest.fixture
def make_app(tmp_path, scanner_settings, call_log_settings, migrated_database):
    def factory(**overrides):
        return _new_app(migrated_database, **{"data_dir": str(tmp_path / "data"),
                                              **scanner_settings, **call_log_settings,
                                              **overrides})
    return factory


@pytest.fixture(scope="module")
def make_module_app(tmp_path_factory, migrated_database):
    """``make_app`` for an app that a whole module only reads (each test
    making its own app of the same settings was most of such a test's time):
    the suite's defaults (the call log off, no scanner), its own data dir."""
    def factory(**overrides):
        return _new_app(migrated_database, **{"data_dir": str(tmp_path_factory.mktemp("app") / "data"),
                                              "call_log": False, **overrides})
    return factory


@pytest.fixture
def app(make_app):
    return make_app()


@pytest.fixture
def client(app):
    return app.test_client()



@pytest.fixture
def operator(client):
    return Operator(client)


@pytest.fixture
def new_bot(client, operator):
    def factory(username: str | None = None) -> BotClient:
        created = operator("createBot", username=username or f"test{next(_names)}_bot")
        return BotClient(client, created["bot"], created["token"])
    return factory


@pytest.fixture
def bot(new_bot):
    return new_bot()


@pytest.fixture
def new_user(operator):
    return lambda: operator("createUser")["user_id"]


@pytest.fixture
def start_chat(operator, new_user):
    """A user who pressed Start for ``bot``: SimpleNamespace(user_id, chat_id)."""
    def factory(bot: BotClient, user_id: int | None = None, **extra):
        user_id = user_id or new_user()
        started = operator("userStart", user_id=user_id, bot_id=bot.id, **extra)
        return SimpleNamespace(user_id=user_id, chat_id=started["chat_id"],
                               update_id=started["update_id"])
    return factory


@pytest.fixture
def chat(bot, start_chat):
    return start_chat(bot)


@pytest.fixture
def db(app):
    """A direct connection to the app's database, for ageing rows and checking state."""
    conn = connect(app.config["SETTINGS"].db_path)
    yield conn
    conn.close()


@pytest.fixture
def clock(monkeypatch):
    """Freezes the machine's clock under the service clock (rate limits,
    dates, leases): ``clock.now`` is what it reads; ``clock.advance(seconds)``
    moves it on."""
    state = SimpleNamespace(now=1_700_000_000.25)
    state.advance = lambda seconds: setattr(state, "now", state.now + seconds)
    monkeypatch.setattr("botsvc.clock.machine_clock", lambda: state.now)
    return state
