"""An SDK bot (botsvc.bot) run by the plugin: the ini key
``botsvc_bot_object = package.module:bot`` names it, and the fixture
``bot_under_test`` polls it in a thread of the test's process against the
test's bot, from the test's start to its end. The fastest path for a suite:
no process to start, and the loop polls at the plugin's pace."""
from __future__ import annotations

import importlib
import sys
from collections.abc import Iterator
from pathlib import Path
from typing import Any

from botsvc.bot import Pause, Polling
from botsvc.testkit.harness import TestBot

# The plugin's pace (the waits of wait_for_message): 2 ms after an empty
# poll, growing by half, to 50 ms. A bot in production grows to 1 s; under
# test an idle second would be a second of every test. At 50 ms an idle bot
# makes 20 polls a second, well under the API rate of 60.
SUITE_PACE = Pause(first=0.002, growth=1.5, longest=0.05)


def poll_at_the_suites_pace() -> None:
    """Every SDK loop started in this process without a ``pause=`` of its
    own polls at the plugin's pace (the user's own fixtures too)."""
    Polling.default_pause = SUITE_PACE


def load(spec: str, folder: Path) -> Any:
    """The object ``package.module:name`` names, imported with ``folder``
    (the ini file's) on sys.path."""
    module_name, _, attribute = spec.partition(":")
    if str(folder) not in sys.path:
        sys.path.insert(0, str(folder))
    target: Any = importlib.import_module(module_name)
    for part in attribute.split("."):
        target = getattr(target, part)
    if not callable(getattr(target, "polling", None)):
        raise TypeError(f"botsvc_bot_object = {spec} names {type(target).__name__}, "
                        "not a bot made with botsvc.bot.Bot")
    return target


def running(spec: str, folder: Path, bot: TestBot) -> Iterator[Any]:
    """Poll the named bot against ``bot`` while the caller yields; then stop
    it (the handler in hand finishes) and raise what ended it early."""
    target = load(spec, folder)
    polling = target.polling(bot.base_url, bot.token)
    thread = polling.start_in_thread()
    bot.update_sent = polling.nudge   # the test's user acted: poll now
    try:
        yield target
    finally:
        bot.update_sent = None
        polling.stop()
        thread.join(timeout=30)
    if polling.failure is not None:
        raise polling.failure
