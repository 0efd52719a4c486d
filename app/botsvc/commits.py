"""This process's commits, announced to the operator calls that wait for what
a commit brings (getBotCalls' and userGetChat's ``wait_ms``;
docs/testing-tools.md#waiting-without-polling).

Every write transaction of app/botsvc/db.py calls ``committed()`` once its
COMMIT is done, and a waiter of this process wakes at once and reads again.
A commit in another worker process wakes no one here: a waiter also reads
again every SLICE_SECONDS, so it sees such a commit within that time.

A waiter holds one of its worker's few threads (gthread) while it waits. So
at most ``most_waiting`` wait at once in a process (the caller passes half
its threads): a call past that reads once and answers at once, as with no
wait, and its caller asks again. A worker that is stopping (``stop_waiting``,
from its signal handler) lets its waiters answer within a slice.
"""
from __future__ import annotations

import threading
import time
from collections.abc import Callable
from typing import TypeVar

SLICE_SECONDS = 0.025

T = TypeVar("T")

_changed = threading.Condition()
_generation = 0       # commits announced while someone waited
_waiting = 0          # waiters now
_stopping = False


def committed() -> None:
    """A write transaction of this process committed: wake the waiters."""
    global _generation
    if not _waiting:   # nobody to wake: no lock taken on a commit's path
        return
    with _changed:
        _generation += 1
        _changed.notify_all()


def stop_waiting() -> None:
    """The process stops: waiters answer with what they have. Safe in a
    signal handler (it takes no lock; a waiter notices within a slice)."""
    global _stopping
    _stopping = True


def read_until(read: Callable[[], T], done: Callable[[T], bool], seconds: float,
               most_waiting: int) -> T:
    """``read()``'s answer once ``done`` says it holds what is waited for,
    or its last one after ``seconds``; read again after each commit of this
    process and every SLICE_SECONDS. ``read`` runs outside any transaction
    (each read sees every commit made before it)."""
    global _waiting
    with _changed:
        admitted = seconds > 0 and not _stopping and _waiting < most_waiting
        if admitted:
            _waiting += 1
    if not admitted:
        return read()
    try:
        deadline = time.monotonic() + seconds
        while True:
            with _changed:
                seen = _generation   # before the read: a commit after it wakes us
            answer = read()
            left = deadline - time.monotonic()
            if done(answer) or left <= 0 or _stopping:
                return answer
            with _changed:
                if _generation == seen:
                    _changed.wait(min(left, SLICE_SECONDS))
    finally:
        with _changed:
            _waiting -= 1
