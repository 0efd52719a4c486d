"""The databases of ``scripts/bench scale``: an installation with a history of
N messages, built with plain SQL (one INSERT ... SELECT over a counter per
batch, each batch its own transaction) on the schema the migrations make.

The shape, at every size:
- 1,000 bots. Bot 1 is the measured one: every user is its member, one chat
  (user 1's, "the long chat") holds a tenth of all messages, and another
  tenth is spread over its other chats; it has a finished broadcast to every
  member and nothing pending. Bot 2 has pending updates (at least 300) and
  no webhook. Of the others, every tenth has a webhook (backing off, so no
  delivery is due while the bench runs) and every tenth a finished
  broadcast; the remaining messages and pending updates are spread evenly.
- 1,000 users below 10^6 messages, 100,000 from there on.
- The long chat has 100 answered button clicks.

The secondary indexes of the large tables and the sandbox's version
triggers are dropped while the rows go in and made again afterwards, with
their own text from the schema (what any bulk load does: a sorted index
build instead of random inserts); the result is the schema the migrations
made, holding the rows it would hold.
"""
from __future__ import annotations

import base64
import hashlib
import sqlite3
import time
from dataclasses import dataclass

from botsvc.auth import hash_token
from botsvc.migrations import migrate

BOTS = 1000
MEASURED_BOT = 1
PENDING_BOT = 2
YEAR = 365 * 86400
LONG_CHAT_CLICKS = 100


@dataclass(frozen=True)
class Shape:
    messages: int

    @property
    def users(self) -> int:
        return 1_000 if self.messages < 1_000_000 else 100_000

    @property
    def chats_per_other_bot(self) -> int:
        return 10 if self.messages < 1_000_000 else 100

    @property
    def long_chat_messages(self) -> int:
        return self.messages // 10

    @property
    def measured_bot_messages(self) -> int:
        return 2 * (self.messages // 10)

    @property
    def other_bot_messages(self) -> int:
        return (self.messages - self.measured_bot_messages) // (BOTS - 1)

    @property
    def pending_bot_updates(self) -> int:
        return max(300, self.messages // 1000)

    @property
    def other_bot_updates(self) -> int:
        return self.messages // 100 // (BOTS - 2)

    def first_chat(self, bot: int) -> int:
        """chats.id of a bot's first chat (bot 1: one per user, ids 1..users)."""
        return 1 if bot == MEASURED_BOT else self.users + (bot - 2) * self.chats_per_other_bot + 1

    def chat_count(self, bot: int) -> int:
        return self.users if bot == MEASURED_BOT else self.chats_per_other_bot


def token(bot: int) -> str:
    """The bench's token of each bot: fixed, so a cached database stays usable."""
    secret = base64.urlsafe_b64encode(hashlib.sha256(f"scale-{bot}".encode()).digest())
    return f"{bot}:{secret.decode()[:43]}"


_COUNTER = "WITH RECURSIVE k(n) AS (SELECT 1 UNION ALL SELECT n + 1 FROM k WHERE n < ?) "
# What is dropped during the load and made again from its own schema text.
_DEFERRED = ("SELECT type, name, sql FROM sqlite_master WHERE sql IS NOT NULL AND ("
             "(type = 'index' AND tbl_name IN ('messages', 'updates', 'chats',"
             " 'broadcast_recipients', 'callback_queries'))"
             " OR (type = 'trigger' AND name LIKE 'sandbox_bump_%'))")


def build(db_path: str, messages: int, say=print) -> float:
    """Build the database of ``messages`` messages at ``db_path``; returns
    the seconds it took."""
    started = time.monotonic()
    shape = Shape(messages)
    migrate(db_path)
    conn = sqlite3.connect(db_path, isolation_level=None)
    conn.execute("PRAGMA cache_size = -1000000")   # the load's own: 1 GB
    conn.execute("PRAGMA synchronous = OFF")       # a failed build is simply built again
    conn.execute("PRAGMA temp_store = MEMORY")
    deferred = conn.execute(_DEFERRED).fetchall()
    for kind, name, _sql in deferred:
        conn.execute(f"DROP {kind.upper()} {name}")
    now = int(time.time())
    start = now - YEAR

    def batch(sql: str, *args) -> None:
        conn.execute("BEGIN")
        conn.execute(sql, args)
        conn.execute("COMMIT")

    batch(_COUNTER + "INSERT INTO users (id, display_name, created_at)"
          " SELECT n, 'User ' || n, ? FROM k", shape.users, start)
    conn.execute("BEGIN")
    conn.executemany(
        "INSERT INTO bots (id, username, display_name, description, token_hash,"
        " last_message_id, created_at) VALUES (?, ?, ?, '', ?, ?, ?)",
        [(b, f"scale{b}_bot", f"Scale bot {b}", hash_token(token(b)),
          shape.measured_bot_messages if b == MEASURED_BOT else shape.other_bot_messages, start)
         for b in range(1, BOTS + 1)])
    conn.execute("COMMIT")
    say(f"  {messages:.0e}: users and bots")
    for bot in range(1, BOTS + 1):
        count = shape.chat_count(bot)
        # Bot 1's chat n is user n's; another bot's are users spread over the range.
        user = "n" if bot == MEASURED_BOT else f"((? * 7 + n) % {shape.users}) + 1"
        args = (count, shape.first_chat(bot) - 1, bot) + (() if bot == MEASURED_BOT else (bot,))
        batch(_COUNTER + "INSERT INTO chats (id, chat_id, bot_id, user_id, status, started_at)"
              f" SELECT ? + n, 'vc_' || lower(hex(randomblob(20))), ?, {user}, 'active',"
              f" {start} + n FROM k", *args)
    say(f"  {messages:.0e}: chats")
    _messages(conn, shape, start, batch)
    say(f"  {messages:.0e}: messages")
    _updates(conn, shape, now, batch)
    _webhooks_and_broadcasts(conn, shape, now, start, batch)
    _clicks(conn, shape, now, batch)
    for _kind, _name, sql in sorted(deferred, key=lambda d: d[0] != "index"):
        conn.execute(sql)
    conn.execute("INSERT INTO sandbox_chat_versions (chat_ref, version) SELECT id, 1 FROM chats")
    conn.execute("PRAGMA wal_checkpoint(TRUNCATE)")
    conn.close()
    return time.monotonic() - started


def _messages(conn, shape: Shape, start: int, batch) -> None:
    """Each bot's history in message_id order (the primary key's order)."""
    text = "'{\"text\":\"message ' || n || ' of a long history\"}'"
    long_chat = shape.long_chat_messages

    def insert(bot: int, first_id: int, count: int, chat: str, total: int) -> None:
        # Dates rise with message_id across the bot's year of history.
        batch(_COUNTER + "INSERT INTO messages (bot_id, message_id, chat_ref, from_bot, type,"
              " date, content) SELECT ?, ? + n, " + chat + ", (? + n) % 2, 'text',"
              f" {start} + (? + n) * {YEAR} / ?, " + text + " FROM k",
              count, bot, first_id, first_id, first_id, total)

    total = shape.measured_bot_messages
    insert(MEASURED_BOT, 0, long_chat, str(shape.first_chat(MEASURED_BOT)), total)
    insert(MEASURED_BOT, long_chat, total - long_chat, f"1 + (n - 1) % {shape.users}", total)
    for bot in range(2, BOTS + 1):
        chat = f"{shape.first_chat(bot)} + (n - 1) % {shape.chats_per_other_bot}"
        insert(bot, 0, shape.other_bot_messages, chat, shape.other_bot_messages)


def _updates(conn, shape: Shape, now: int, batch) -> None:
    """Pending updates (a user's message each), made recent at every run
    (``refresh``): updates older than a day are dropped by the service."""
    for bot in range(2, BOTS + 1):
        count = shape.pending_bot_updates if bot == PENDING_BOT else shape.other_bot_updates
        if not count:
            continue
        batch(_COUNTER + "INSERT INTO updates (bot_id, payload, created_at)"
              " SELECT ?, json_object('message', json_object('message_id', n, 'chat',"
              " json_object('id', c.chat_id, 'type', 'private'), 'date', ?, 'type', 'text',"
              " 'from_bot', json('false'), 'text', 'pending update ' || n)), ?"
              " FROM k JOIN chats c ON c.id = ?", count, bot, now, now, shape.first_chat(bot))


def _webhooks_and_broadcasts(conn, shape: Shape, now: int, start: int, batch) -> None:
    conn.execute("BEGIN")
    conn.executemany(
        "INSERT INTO webhooks (bot_id, url, secret_token, generation, set_at, failures,"
        " next_attempt_at, last_error, last_error_at) VALUES (?, ?, 'scale_secret_0123456789',"
        " 1, ?, 12, ?, 'connection refused', ?)",
        [(b, f"https://hooks.example.com/{b}", start, now + 30 * 86400, now)
         for b in range(10, BOTS + 1, 10)])
    conn.execute("COMMIT")
    payload = '{"text":"news for every member"}'
    for bot in [MEASURED_BOT, *range(5, BOTS + 1, 10)]:
        count = shape.chat_count(bot)
        conn.execute("BEGIN")
        ref = conn.execute(
            "INSERT INTO broadcasts (broadcast_id, bot_id, method, payload, status, total,"
            " queued, sent, created_at, completed_at) VALUES ('bc_' || lower(hex(randomblob(16))),"
            " ?, 'sendMessage', ?, 'completed', ?, 0, ?, ?, ?)",
            (bot, payload, count, count, start, start + 600)).lastrowid
        conn.execute(
            "INSERT INTO broadcast_recipients (broadcast_ref, position, chat_ref, status,"
            " message_id) SELECT ?, ROW_NUMBER() OVER (ORDER BY chat_id), id, 'sent', id"
            " FROM chats WHERE bot_id = ?", (ref, bot))
        conn.execute("COMMIT")


def _clicks(conn, shape: Shape, now: int, batch) -> None:
    """Answered clicks on the bot's messages of the long chat (odd ids)."""
    batch(_COUNTER + "INSERT INTO callback_queries (query_id, bot_id, chat_ref, message_id,"
          " data, created_at, answered_at, answer_seq, answer_text, show_alert)"
          " SELECT lower(hex(randomblob(16))), ?, ?, 2 * n - 1, 'pressed', ?, ?, n, 'Done', 0"
          " FROM k", LONG_CHAT_CLICKS, MEASURED_BOT, shape.first_chat(MEASURED_BOT), now, now)


def refresh(db_path: str) -> None:
    """Make a cached database's day-bound rows current: pending updates (and
    anything else the clean-up counts in days) dated now."""
    conn = sqlite3.connect(db_path, isolation_level=None)
    now = int(time.time())
    conn.execute("BEGIN")
    conn.execute("UPDATE updates SET created_at = ?", (now,))
    conn.execute("UPDATE webhooks SET next_attempt_at = ?", (now + 30 * 86400,))
    conn.execute("COMMIT")
    conn.close()


def cached(cache_dir, messages: int, say=print) -> tuple[str, float | None]:
    """The database of ``messages`` messages in the cache (built now if it is
    not there) and the seconds its build took when it was built."""
    import json
    import os

    directory = os.path.join(str(cache_dir), f"scale-{messages:.0e}".replace("+", ""))
    path = os.path.join(directory, "botsvc.sqlite3")
    record = os.path.join(directory, "build.json")
    if not os.path.exists(record):
        if os.path.exists(directory):
            import shutil
            shutil.rmtree(directory)   # a build that did not finish
        os.makedirs(directory)
        say(f"building the database of {messages:.0e} messages in {directory}")
        seconds = build(path, messages, say)
        with open(record, "w") as out:
            json.dump({"messages": messages, "build_seconds": seconds,
                       "bytes": os.path.getsize(path)}, out)
    with open(record) as saved:
        return path, json.load(saved)["build_seconds"]
