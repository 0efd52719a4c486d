"""The operator reads that can wait (``wait_ms``: getBotCalls, userGetChat):
a test's harness asks once and is answered as soon as what it waits for is
written, rather than asking every few milliseconds
(docs/testing-tools.md#waiting-without-polling).

The wait itself is app/botsvc/commits.py's: woken by this process's commits,
looking again every 25 ms for the other workers'. A waiting call holds a
thread of its worker, so at most half of a worker's threads wait at once;
a call past that is answered at once, as if it had not asked to wait."""
from __future__ import annotations

from collections.abc import Callable
from typing import TypeVar

from flask import current_app

from botsvc import commits
from botsvc.catalogue.validation import Int
from botsvc.contract import OPERATOR_WAIT_MAX_MS

T = TypeVar("T")


def WaitMs(until: str) -> Int:
    """The ``wait_ms`` field of a read that waits ``until`` something is there."""
    return Int(min=0, max=OPERATOR_WAIT_MAX_MS, load_default=0, metadata={
        "description": f"wait up to this many milliseconds until {until}, then answer as"
                       " without it (what did arrive, maybe nothing); 0: answer at once. A"
                       " server whose waiting calls already hold half its threads answers"
                       " at once."})


def waited(read: Callable[[], T], done: Callable[[T], bool], wait_ms: int) -> T:
    """``read()``'s answer, read again until ``done`` or ``wait_ms`` ran out."""
    threads = current_app.config["SETTINGS"].threads
    return commits.read_until(read, done, wait_ms / 1000, most_waiting=threads // 2)
