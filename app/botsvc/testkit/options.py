"""The plugin's settings, each declared once here as a command-line option,
an ini key and an environment variable, and read in that order: the option
wins, then the ini key (``[pytest]`` in pytest.ini, ``[tool:pytest]`` in
setup.cfg, ``[tool.pytest.ini_options]`` in pyproject.toml), then the
variable. All of them appear in ``pytest --help`` under "botsvc".

A bad value is one usage error before any test runs (pytest's exit status
4), never a traceback per test: ``read`` checks every value it is given.
The admin token of a server named by ``botsvc_url`` is read from
BOTSVC_ADMIN_TOKEN only: a secret does not belong in an ini file kept in a
repository, nor on a command line that ``ps`` shows.
"""
from __future__ import annotations

import os
import re
import shlex
from dataclasses import dataclass

import pytest

from botsvc.config import SettingError, http_url

KEEP_CHOICES = ("failed", "always", "never")
_BIND = re.compile(r"^(?P<host>\[[0-9A-Fa-f:.]+\]|[A-Za-z0-9.-]+):(?P<port>[0-9]{1,5})$")
_OBJECT = re.compile(r"^[A-Za-z_][\w.]*:[A-Za-z_][\w.]*$")


@dataclass(frozen=True)
class Setting:
    ini: str        # the ini key; the option is the same with dashes
    env: str        # the fallback
    metavar: str
    help: str

    @property
    def flag(self) -> str:
        return "--" + self.ini.replace("_", "-")


SETTINGS = (
    Setting("botsvc_url", "BOTSVC_URL", "URL",
            "use the running botsvc at this address (with BOTSVC_ADMIN_TOKEN; it needs"
            " BOTSVC_TEST_TOOLS=1 for the testing tools) instead of starting one"),
    Setting("botsvc_bind", "BOTSVC_PYTEST_BIND", "HOST:PORT",
            "the address the started server listens on (default: 127.0.0.1 and a free port)"),
    Setting("botsvc_keep", "BOTSVC_PYTEST_KEEP", "WHEN",
            "keep the started server's data dir and log after the session: failed (the"
            " default: when a test failed), always or never"),
    Setting("botsvc_bot_command", "BOTSVC_BOT_COMMAND", "COMMAND",
            "the bot under test as a process: this command line (split as a shell would, run"
            " in the rootdir, with BOTSVC_BASE_URL and BOTSVC_BOT_TOKEN) is started for each"
            " test that asks for bot_under_test"),
    Setting("botsvc_bot_object", "BOTSVC_BOT_OBJECT", "MODULE:NAME",
            "the bot under test in the test's own process: the botsvc SDK bot object at"
            " MODULE:NAME (imported with the ini file's folder on sys.path), polled for each"
            " test that asks for bot_under_test"),
)


@dataclass(frozen=True)
class PluginSettings:
    """The settings as given; ``sources`` says where each came from (for the
    header and the messages: ``--botsvc-url``, ``botsvc_url (ini)``, ``BOTSVC_URL``)."""
    url: str | None = None
    admin_token: str | None = None
    bind_host: str = "127.0.0.1"
    bind_port: int | None = None
    keep: str = "failed"
    bot_command: tuple[str, ...] | None = None
    bot_object: str | None = None
    sources: tuple[tuple[str, str], ...] = ()

    def source(self, ini: str) -> str:
        return dict(self.sources).get(ini, ini)


def add_options(parser: pytest.Parser) -> None:
    group = parser.getgroup("botsvc", "botsvc (a real bot messaging server for your bot's tests)")
    for setting in SETTINGS:
        group.addoption(setting.flag, dest=setting.ini, metavar=setting.metavar, default=None,
                        help=f"{setting.help}. ini: {setting.ini}; environment: {setting.env}")
        parser.addini(setting.ini, f"{setting.help} (option {setting.flag}, environment"
                                   f" {setting.env})", default=None)


def _given(config: pytest.Config, env: dict, setting: Setting) -> tuple[str, str] | None:
    """The value and where it came from, or None when no one set it."""
    for value, source in ((config.getoption(setting.ini, None), setting.flag),
                          (config.getini(setting.ini), f"{setting.ini} (ini)"),
                          (env.get(setting.env), setting.env)):
        if value is not None and str(value).strip():
            return str(value).strip(), source
    return None


def read(config: pytest.Config, env: dict | None = None) -> PluginSettings:
    """Every setting, checked: a bad one raises ``pytest.UsageError`` naming it."""
    env = os.environ if env is None else env
    given = {s.ini: found for s in SETTINGS if (found := _given(config, env, s)) is not None}
    values: dict = {"sources": tuple((ini, source) for ini, (_, source) in given.items()),
                    "admin_token": env.get("BOTSVC_ADMIN_TOKEN") or None}
    for ini, (raw, source) in given.items():
        values.update(_checked(ini, raw, source))
    if "bot_command" in values and "bot_object" in values:
        raise pytest.UsageError(f"botsvc: {given['botsvc_bot_command'][1]} and"
                                f" {given['botsvc_bot_object'][1]} are both set: the bot under"
                                " test is a process or an object, not both")
    return PluginSettings(**values)


def _checked(ini: str, raw: str, source: str) -> dict:
    if ini == "botsvc_url":
        try:
            return {"url": http_url(source, raw)}
        except SettingError as refused:
            raise pytest.UsageError(str(refused)) from None
    if ini == "botsvc_bind":
        match = _BIND.match(raw)
        if not match or not 1 <= int(match["port"]) <= 65535:
            raise pytest.UsageError(f"botsvc: {source} must be HOST:PORT (port 1 to 65535),"
                                    f" got {raw!r}")
        return {"bind_host": match["host"].strip("[]"), "bind_port": int(match["port"])}
    if ini == "botsvc_keep":
        if raw not in KEEP_CHOICES:
            raise pytest.UsageError(f"botsvc: {source} must be one of {', '.join(KEEP_CHOICES)},"
                                    f" got {raw!r}")
        return {"keep": raw}
    if ini == "botsvc_bot_command":
        try:
            argv = tuple(shlex.split(raw))
        except ValueError as bad:
            raise pytest.UsageError(f"botsvc: {source} is not a command line ({bad}):"
                                    f" {raw!r}") from None
        if not argv:
            raise pytest.UsageError(f"botsvc: {source} is empty")
        return {"bot_command": argv}
    if not _OBJECT.match(raw):
        raise pytest.UsageError(f"botsvc: {source} must be MODULE:NAME (a bot object, e.g."
                                f" mybot.main:bot), got {raw!r}")
    return {"bot_object": raw}
