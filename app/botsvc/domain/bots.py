"""The bot manager's side: bots, their tokens and the two switches."""
from __future__ import annotations

import sqlite3

from botsvc.auth import hash_token, new_token
from botsvc.clock import now
from botsvc.db import transaction
from botsvc.errors import invalid


def render_bot(row: sqlite3.Row) -> dict:
    return {"id": row["id"], "is_bot": True, "username": row["username"],
            "display_name": row["display_name"], "description": row["description"]}


def find_bot(conn: sqlite3.Connection, bot_id: int) -> sqlite3.Row | None:
    return conn.execute("SELECT * FROM bots WHERE id = ?", (bot_id,)).fetchone()


def require_bot(conn: sqlite3.Connection, bot_id: int, field: str = "bot_id") -> sqlite3.Row:
    row = find_bot(conn, bot_id)
    if row is None:
        raise invalid(field, f"No bot with id {bot_id}")
    return row


def create_bot(conn: sqlite3.Connection, username: str, *, display_name: str | None = None,
               description: str | None = None) -> tuple[dict, str]:
    """A new bot and its first token (returned once, stored only as a hash)."""
    with transaction(conn):
        if conn.execute("SELECT 1 FROM bots WHERE username = ?", (username,)).fetchone():
            raise invalid("username", f"Username {username} is taken")
        bot_id = conn.execute(
            "INSERT INTO bots (username, display_name, description, token_hash, created_at)"
            " VALUES (?, ?, ?, x'', ?)",
            (username, display_name or username, description or "", now())).lastrowid
        token = new_token(bot_id)
        conn.execute("UPDATE bots SET token_hash = ? WHERE id = ?", (hash_token(token), bot_id))
        row = require_bot(conn, bot_id)
    return render_bot(row), token


def rotate_token(conn: sqlite3.Connection, bot_id: int) -> str:
    """A new token; the previous one stops working with this commit."""
    with transaction(conn):
        require_bot(conn, bot_id)
        token = new_token(bot_id)
        conn.execute("UPDATE bots SET token_hash = ? WHERE id = ?", (hash_token(token), bot_id))
    return token


def set_bot_disabled(conn: sqlite3.Connection, bot_id: int, disabled: bool) -> None:
    with transaction(conn):
        require_bot(conn, bot_id)
        conn.execute("UPDATE bots SET disabled = ? WHERE id = ?", (int(disabled), bot_id))


def set_platform_disabled(conn: sqlite3.Connection, disabled: bool) -> None:
    with transaction(conn):
        conn.execute("UPDATE platform SET disabled = ? WHERE id = 1", (int(disabled),))


def is_platform_disabled(conn: sqlite3.Connection) -> bool:
    return bool(conn.execute("SELECT disabled FROM platform WHERE id = 1").fetchone()[0])


def list_bots(conn: sqlite3.Connection) -> list[dict]:
    rows = conn.execute("SELECT * FROM bots ORDER BY id").fetchall()
    return [{**render_bot(row), "disabled": bool(row["disabled"])} for row in rows]


def create_user(conn: sqlite3.Connection, display_name: str | None = None) -> int:
    with transaction(conn):
        return conn.execute("INSERT INTO users (display_name, created_at) VALUES (?, ?)",
                            (display_name or "", now())).lastrowid


def require_user(conn: sqlite3.Connection, user_id: int) -> sqlite3.Row:
    row = conn.execute("SELECT * FROM users WHERE id = ?", (user_id,)).fetchone()
    if row is None:
        raise invalid("user_id", f"No user with id {user_id}")
    return row


def list_users(conn: sqlite3.Connection, *, limit: int = -1,
               user_id: int | None = None) -> list[dict]:
    """The newest ``limit`` users (every user by default), oldest first; or
    the one with ``user_id`` (a list of one, or empty)."""
    if user_id is not None:
        rows = conn.execute("SELECT id, display_name, created_at FROM users WHERE id = ?",
                            (user_id,)).fetchall()
    else:
        rows = conn.execute("SELECT id, display_name, created_at FROM users"
                            " ORDER BY id DESC LIMIT ?", (limit,)).fetchall()[::-1]
    return [{"user_id": row["id"], "display_name": row["display_name"],
             "created_at": row["created_at"]} for row in rows]
