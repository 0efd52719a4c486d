"""What SQLite plans to do for a statement: the check that a hot query reads
an index range, never a whole table or index (EXPLAIN QUERY PLAN). Imported
as ``from tests.support.query_plans import full_scans``."""
from __future__ import annotations

import sqlite3
from collections.abc import Callable


def statements_of(conn: sqlite3.Connection, action: Callable[[], object]) -> list[str]:
    """The SELECT statements ``action`` ran on ``conn``, values bound."""
    seen: list[str] = []
    conn.set_trace_callback(seen.append)
    try:
        action()
    finally:
        conn.set_trace_callback(None)
    return [s for s in seen if s.lstrip().upper().startswith("SELECT")]


def plan(conn: sqlite3.Connection, statement: str) -> list[str]:
    return [row[3] for row in conn.execute("EXPLAIN QUERY PLAN " + statement)]


def full_scans(conn: sqlite3.Connection, statement: str) -> list[str]:
    """The steps of the statement's plan that read a whole table or index. A
    scan of a subquery's own rows (already bounded by its LIMIT and read
    through its own plan, checked too) is not one."""
    return [detail for detail in plan(conn, statement)
            if detail.startswith("SCAN ") and not detail.startswith("SCAN (subquery-")]
