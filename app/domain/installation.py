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

import sqlite3

from app import clock
from app.db import transaction
from app.domain.files import remove_stored

# Children before parents (foreign keys are on).
RESET_TABLES = (
    "broadcast_recipients", "broadcasts", "callback_queries", "chat_events", "messages",
    "webhook_deliveries", "faults", "updates", "webhooks", "files", "chats",
    "idempotency_keys", "rate_limits", "bot_calls", "bot_call_counts", "users", "bots",
    # Last: deleting messages above bumps these (the sandbox's triggers).
    "sandbox_chat_versions", "sandbox_message_revisions", "sandbox_signin_failures",
)
# What a reset keeps: the platform row (switch back on, clock offset back to
# 0), the periodic jobs' schedule, SQLite's id sequences, the record of
# applied migrations (the schema is not reset), the sandbox's sign-ins (a
# person at the browser stays signed in while their test suite resets) and the
# background jobs' records (the installation's health, not its content).
KEPT_TABLES = ("platform", "periodic_jobs", "sqlite_sequence", "schema_migrations",
               "sandbox_sessions", "job_runs")


def reset_installation(conn: sqlite3.Connection, data_dir: str) -> int:
    """Empty the installation; returns how many stored files were removed.
    Settings and the signing key are not in the database and stay."""
    with transaction(conn):
        stored = [row[0] for row in conn.execute("SELECT storage_name FROM files")]
        for table in RESET_TABLES:
            conn.execute(f"DELETE FROM {table}")
        conn.execute("UPDATE platform SET disabled = 0 WHERE id = 1")
        clock.set_offset(conn, 0)
    remove_stored(data_dir, stored)
    return len(stored)
