"""What the sandbox's pages show besides one chat: each bot's vital signs for
the bot manager, and one user's list of chats for the messenger's sidebar.
Reads only; every figure comes from the domain function that owns it."""
from __future__ import annotations

import sqlite3

from botsvc import clock
from botsvc.domain import bots, broadcasts, chats, webhooks
from botsvc.sandbox import calls

RECENT_BROADCASTS = 5
# A sidebar line shows about 40 characters: a 16 KB text is not sent whole
# to every chat list poll.
PREVIEW_MAX_CHARS = 120
PREVIEW_LABELS = {"photo": "Photo", "video": "Video", "animation": "GIF", "audio": "Audio",
                  "voice": "Voice message", "document": "File", "card": "Card"}


def bot_cards(conn: sqlite3.Connection) -> list[dict]:
    """Every bot (as listBots shows it) with its webhook, subscriber count and
    recent broadcasts."""
    at = clock.time()
    return [{**bot,
             "webhook": webhooks.webhook_info(conn, bot["id"], at),
             "subscribers": broadcasts.subscriber_count(conn, bot["id"]),
             "broadcasts": broadcasts.recent_broadcasts(conn, bot["id"], RECENT_BROADCASTS)}
            for bot in calls.run("listBots", {})]


def membership(chat: sqlite3.Row | dict | None) -> str:
    """The state a person sees: not started, active, stopped or blocked."""
    if chat is None:
        return "not started"
    if chat["blocked"]:
        return "blocked"
    return chat["status"]


def chat_list(conn: sqlite3.Connection, user_id: int) -> list[dict]:
    """One entry per bot: the user's membership and the last message they see."""
    found = chats.chats_of_user(conn, user_id)
    entries = []
    for bot in calls.run("listBots", {}):
        chat = found.get(bot["id"])
        last = chat["last"] if chat else None
        entries.append({"bot": bot, "state": membership(chat and chat["chat"]), "last": last,
                        "preview": preview(last), "unread": chat["unread"] if chat else 0})
    return entries


def preview(message: dict | None) -> str:
    """One line for the sidebar: the text, or what kind of message it is."""
    if message is None:
        return ""
    if message["type"] == "text":
        return _bounded(message["text"])
    label = PREVIEW_LABELS.get(message["type"], message["type"])
    detail = message.get("caption") or (message.get("card") or {}).get("title") or ""
    return _bounded(f"{label}: {detail}" if detail else label)


def _bounded(text: str) -> str:
    return text if len(text) <= PREVIEW_MAX_CHARS else text[:PREVIEW_MAX_CHARS - 1] + "\u2026"


def users(conn: sqlite3.Connection, limit: int) -> list[dict]:
    """The newest ``limit`` users, oldest first."""
    return bots.list_users(conn, limit=limit)


def find_user(conn: sqlite3.Connection, user_id: int) -> dict | None:
    return next(iter(bots.list_users(conn, limit=1, user_id=user_id)), None)


def find_bot(conn: sqlite3.Connection, bot_id: int) -> dict | None:
    """A bot as listBots shows it, or None."""
    row = bots.find_bot(conn, bot_id)
    return None if row is None else {**bots.render_bot(row), "disabled": bool(row["disabled"])}
