"""``reset``: the installation empty again, while it runs.

Everything goes in one write transaction, so a request or a job sees either
the whole installation or none of it; the stored files are removed after the
commit (a file is never gone while its row is still visible). What runs
across the reset copes with what vanished: a /v2 call whose bot went away
answers UNAUTHORIZED, the webhook deliverer records nothing for a bot that
is gone, the broadcast deliverer finds no broadcast left.

Ids are not reused: the AUTOINCREMENT sequences (bots, users, updates) go
on, so a token, update_id or bot_id from before a reset can never name
something created after it, not even by a request still in flight.
"""
from __future__ import annotations

import re
import sqlite3

from botsvc import clock
from botsvc.db import transaction
from botsvc.domain.files import remove_stored

# Children before parents (foreign keys are on).
RESET_TABLES = (
    "broadcast_recipients", "broadcasts", "callback_queries", "chat_events", "messages",
    "webhook_deliveries", "faults", "update_replays", "updates", "webhooks", "files", "chats",
    "idempotency_keys", "rate_limits", "bot_calls", "bot_call_counts", "users", "bots",
    # Last: deleting messages above bumps these (the sandbox's triggers).
    "sandbox_chat_versions", "sandbox_message_revisions", "sandbox_signin_failures",
    "clock_moves",
)
# What a reset keeps: the platform row (switch back on, clock offset back to
# 0), the periodic jobs' schedule, SQLite's id sequences, the record of
# applied migrations (the schema is not reset), the sandbox's sign-ins (a
# person at the browser stays signed in while their test suite resets) and the
# background jobs' records (the installation's health, not its content).
KEPT_TABLES = ("platform", "periodic_jobs", "sqlite_sequence", "schema_migrations",
               "sandbox_sessions", "job_runs")


def _delete_triggers(conn: sqlite3.Connection) -> list[tuple[str, str]]:
    """The delete triggers of the emptied tables, with their own text.

    ``DELETE FROM t`` with no WHERE empties a table page by page (SQLite's
    truncate optimization) unless each row must be seen: by a delete trigger
    (the sandbox's chat versions, on messages) or by foreign key checks.
    Row by row, a reset of 10^7 messages took 300 s (scripts/bench scale);
    page by page, seconds. The triggers are dropped for the reset and made
    again from their own text in the same transaction: the versions they
    would bump are emptied too."""
    marks = ",".join("?" * len(RESET_TABLES))
    rows = conn.execute(f"SELECT name, sql FROM sqlite_master WHERE type = 'trigger'"
                        f" AND tbl_name IN ({marks})", RESET_TABLES)
    return [(name, sql) for name, sql in rows if _DELETE_TRIGGER.search(sql)]


_DELETE_TRIGGER = re.compile(r"\b(?:BEFORE|AFTER|INSTEAD\s+OF)\s+DELETE\s+ON\b", re.I)


def reset_installation(conn: sqlite3.Connection, data_dir: str) -> int:
    """Empty the installation; returns how many stored files were removed.
    Settings and the signing key are not in the database and stay."""
    # Every table is emptied, children before parents: no row can be left
    # without its parent, so this connection checks no foreign key meanwhile
    # (it must be set outside a transaction; a caller's open one keeps it on).
    conn.execute("PRAGMA foreign_keys = OFF")
    try:
        with transaction(conn):
            stored = [row[0] for row in conn.execute("SELECT storage_name FROM files")]
            triggers = _delete_triggers(conn)
            for name, _sql in triggers:
                conn.execute(f"DROP TRIGGER {name}")
            for table in RESET_TABLES:
                conn.execute(f"DELETE FROM {table}")
            for _name, sql in triggers:
                conn.execute(sql)
            conn.execute("UPDATE platform SET disabled = 0 WHERE id = 1")
            clock.set_offset(conn, 0)
    finally:
        conn.execute("PRAGMA foreign_keys = ON")
    remove_stored(data_dir, stored)
    return len(stored)
