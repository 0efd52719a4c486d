"""Many members at once, through the same domain functions the operator API
uses (userStart), but in one transaction on the database file: thousands of
HTTP round trips would only slow the tests down."""
from __future__ import annotations

from botsvc.db import connect, transaction
from botsvc.domain import bots, chats


def add_members(db_path: str, bot_id: int, count: int) -> list[str]:
    """``count`` new users who pressed Start for the bot; their chat_ids."""
    conn = connect(db_path)
    try:
        with transaction(conn):
            return [chats.user_start(conn, bot_id, bots.create_user(conn, None))["chat_id"]
                    for _ in range(count)]
    finally:
        conn.close()
