"""Running an SDK bot beside a test: its polling loop in a thread at the
plugin's pace, stopped and joined when the test is done."""
from __future__ import annotations

import time
from collections.abc import Callable, Iterator
from contextlib import contextmanager

from botsvc.bot import Bot, Pause, Polling
from botsvc.testkit.harness import TestBot

# The plugin's waits (2 ms, growing by half, to 50 ms): no test waits on the
# bot's idle pause.
SUITE_PACE = Pause(first=0.002, growth=1.5, longest=0.05)


@contextmanager
def polling(bot: Bot, test_bot: TestBot, **options) -> Iterator[Polling]:
    runner = bot.polling(test_bot.base_url, test_bot.token, **{"pause": SUITE_PACE, **options})
    thread = runner.start_in_thread()
    try:
        yield runner
    finally:
        runner.stop()
        thread.join(timeout=30)
    assert not thread.is_alive(), "the polling loop did not stop"
    assert runner.failure is None, runner.failure


def wait_until(condition: Callable[[], object], timeout: float = 10.0):
    deadline = time.monotonic() + timeout
    while not (value := condition()):
        assert time.monotonic() < deadline, "timed out"
        time.sleep(0.01)
    return value
