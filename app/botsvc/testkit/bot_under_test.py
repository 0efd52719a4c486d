"""The plugin's ``bot_under_test`` for one test, when a setting names the
bot: ``botsvc_bot_command``, a process in any language (``bot_process``), or
``botsvc_bot_object``, an SDK bot object run in the test's own process
(``sdk_bot``). Without either, the plugin's fixture says what to set."""
from __future__ import annotations

from collections.abc import Iterator

import pytest

from botsvc.testkit.bot_process import BotCannotStart, BotProcess
from botsvc.testkit.harness import TestBot
from botsvc.testkit.options import PluginSettings


def for_one_test(request: pytest.FixtureRequest, settings: PluginSettings,
                 bot: TestBot) -> Iterator:
    """Yields while the test runs, the bot running; stops it after."""
    if settings.bot_command:
        yield from _process(request, settings, bot)
    else:
        yield from _sdk_object(request, settings.bot_object, bot)


def _process(request: pytest.FixtureRequest, settings: PluginSettings, bot: TestBot):
    """The bot's process for one test, run in the rootdir; the waits fail
    the step at once if it exits, and a failing test's report shows what it
    printed (``BotProcess.report_section``)."""
    process = BotProcess(settings.bot_command, base_url=bot.base_url, token=bot.token,
                         output_path=request.getfixturevalue("tmp_path") / "bot-output.log",
                         cwd=request.config.rootpath)
    try:
        process.start()
    except BotCannotStart as refused:
        pytest.fail(f"{settings.source('botsvc_bot_command')}: {refused}", pytrace=False)
    bot.process_check = process.check
    try:
        yield process
    finally:
        bot.process_check = None
        process.stop()


def _sdk_object(request: pytest.FixtureRequest, spec: str, bot: TestBot):
    """The SDK's bot object MODULE:NAME, polled against ``bot`` in this
    process for one test (imported with the ini file's folder, else the
    rootdir, on sys.path)."""
    from botsvc.testkit.sdk_bot import running  # lazy: only a suite that names one loads the SDK

    config = request.config
    folder = config.inipath.parent if config.inipath else config.rootpath
    yield from running(spec, folder, bot)
