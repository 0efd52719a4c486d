"""What changed in a chat since a reader last looked: the sandbox's live view.

Every change a chat's user could see (a message sent, edited or deleted, a
callback answered, the membership changed) bumps the chat's version, by
triggers in the database (migration 0009), whoever made the change. A reader
that holds a version asks whether it is still current with one indexed read.
"""
from __future__ import annotations

import sqlite3


def chat_version(conn: sqlite3.Connection, chat: sqlite3.Row) -> int:
    row = conn.execute("SELECT version FROM sandbox_chat_versions WHERE chat_ref = ?",
                       (chat["id"],)).fetchone()
    return row["version"] if row else 0
