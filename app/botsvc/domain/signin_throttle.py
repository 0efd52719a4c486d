"""Slowing down wrong admin tokens at the sandbox's sign-in.

Per client address (an IPv6 /64 counts as one address): the first
``FREE_FAILURES`` wrong tokens in a row cost nothing; after each further one
the address must wait 1, 2, 4, ... seconds (at most ``MAX_WAIT_SECONDS``)
before its next attempt is even looked at. An attempt during the wait is
refused at once, with the seconds left, so no worker thread ever sleeps on
it. The state is a row in SQLite, so it holds across every worker process;
the check and the count are one write transaction, so concurrent attempts
cannot slip past it. A right token clears the address's record; a record
with no failure for ``FORGET_AFTER_SECONDS`` is forgotten.
"""
from __future__ import annotations

import ipaddress
import sqlite3
from collections.abc import Callable

from botsvc import clock
from botsvc.db import transaction

FREE_FAILURES = 5
MAX_WAIT_SECONDS = 15 * 60
FORGET_AFTER_SECONDS = 3600


class Throttled(Exception):
    def __init__(self, retry_after: int):
        super().__init__(f"retry after {retry_after} s")
        self.retry_after = retry_after


def client_key(remote_addr: str | None) -> str:
    """The address a throttle record is kept for: IPv4 as is, IPv6 by its /64
    (one host usually holds a whole /64)."""
    try:
        address = ipaddress.ip_address(remote_addr or "")
    except ValueError:
        return remote_addr or "unknown"
    if address.version == 6:
        if address.ipv4_mapped is not None:
            return str(address.ipv4_mapped)
        return str(ipaddress.ip_network(f"{address}/64", strict=False))
    return str(address)


def wait_after(failures: int) -> int:
    """Seconds an address waits after its ``failures``-th wrong token in a row."""
    if failures <= FREE_FAILURES:
        return 0
    return min(MAX_WAIT_SECONDS, 2 ** min(failures - FREE_FAILURES - 1, 20))


def attempt(conn: sqlite3.Connection, client: str, is_right: Callable[[], bool]) -> bool:
    """Check one sign-in attempt of ``client``: Throttled while it must wait,
    otherwise whether ``is_right()`` (the constant-time token comparison)."""
    at = int(clock.machine_time())
    with transaction(conn):
        conn.execute("DELETE FROM sandbox_signin_failures WHERE last_failure_at < ?",
                     (at - FORGET_AFTER_SECONDS,))
        row = conn.execute("SELECT failures, blocked_until FROM sandbox_signin_failures"
                           " WHERE client = ?", (client,)).fetchone()
        if row is not None and row["blocked_until"] > at:
            raise Throttled(row["blocked_until"] - at)
        if is_right():
            conn.execute("DELETE FROM sandbox_signin_failures WHERE client = ?", (client,))
            return True
        failures = (row["failures"] if row else 0) + 1
        conn.execute(
            "INSERT INTO sandbox_signin_failures (client, failures, last_failure_at,"
            " blocked_until) VALUES (:client, :failures, :at, :until)"
            " ON CONFLICT (client) DO UPDATE SET failures = :failures,"
            " last_failure_at = :at, blocked_until = :until",
            {"client": client, "failures": failures, "at": at,
             "until": at + wait_after(failures)})
    return False
