"""The one client function of the waits that do not poll (``waited``):
wait_for_message, wait_for_call and an exported conversation's expectations
read through it (docs/testing-tools.md#waiting-without-polling)."""
from __future__ import annotations

import time
from collections.abc import Callable, Iterator
from typing import TypeVar

from botsvc.contract import OPERATOR_WAIT_MAX_MS

# A read the server answered early with nothing new (its waiting calls hold
# half its threads already) is asked again after a pause: 2 ms, each half
# again as long, up to 50 ms.
PAUSE_FIRST_SECONDS, PAUSE_MAX_SECONDS = 0.002, 0.05
T = TypeVar("T")


def waited(read: Callable[[int], T], fresh: Callable[[T], bool], timeout: float,
           most_seconds: float | None = None) -> Iterator[T]:
    """The answers of an operator read that waits on the server (getBotCalls'
    and userGetChat's ``wait_ms``), until ``timeout`` seconds have passed:
    ``read(wait_ms)`` is asked with the time left (at most the server's
    bound, and ``most_seconds`` when given), so the server answers as soon
    as what is waited for is written, and the caller stops at the first
    answer it wants. The last read is made at the deadline. A read answered
    early, of which ``fresh`` says it held nothing new, is asked again after
    a short pause.

        for page in waited(lambda ms: operator.get_bot_calls(bot_id, wait_ms=ms,
                                                             after_call_id=seen),
                           lambda page: bool(page["calls"]), timeout=5):
            ...
    """
    deadline = time.monotonic() + timeout
    pause = PAUSE_FIRST_SECONDS
    while True:
        left = deadline - time.monotonic()
        wait_ms = max(0, min(int(min(left, most_seconds or left) * 1000),
                             OPERATOR_WAIT_MAX_MS))
        asked = time.monotonic()
        answer = read(wait_ms)
        early = time.monotonic() - asked < wait_ms / 2000 and not fresh(answer)
        yield answer
        if left <= 0:
            return
        if early:
            time.sleep(max(min(pause, deadline - time.monotonic()), 0))
            pause = min(pause * 1.5, PAUSE_MAX_SECONDS)
