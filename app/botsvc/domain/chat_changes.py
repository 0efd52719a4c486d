"""What changed in a chat since a reader last looked: the sandbox's live view.

Every change a chat's user could see (a message sent, edited or deleted, a
callback answered, the membership changed) bumps the chat's version, by
triggers in the database (migrations 0009 and 0012), whoever made the
change; an edit or a deletion also records the version it made for that
message (``sandbox_message_revisions``). A reader holds where it is: the
version, the newest message_id, answer and journal entry it has seen; it
asks whether the version is still current with one indexed read, and when
it is not, reads only what came after what it holds, each an index range.
"""
from __future__ import annotations

import sqlite3
from dataclasses import dataclass

from botsvc.domain import callbacks, chat_events, messages

# What one answer carries at most of each kind; a reader that is further
# behind starts again from the newest page.
CHANGES_AT_MOST = 200


@dataclass(frozen=True)
class Position:
    """Where a reader of a chat is: every change up to here it has seen."""
    chat_ref: int
    version: int
    message_id: int     # the newest message_id it knows (deleted or not)
    answer_seq: int     # the last callback answer it has seen
    event_id: int       # the last journal entry it has seen

    def text(self) -> str:
        return ".".join(str(n) for n in (self.chat_ref, self.version, self.message_id,
                                         self.answer_seq, self.event_id))

    @classmethod
    def parse(cls, text: str | None) -> Position | None:
        """A position a reader sent back, or None when it is not one."""
        parts = (text or "").split(".")
        if len(parts) != 5 or not all(p.isdigit() and len(p) <= 18 for p in parts):
            return None
        return cls(*(int(p) for p in parts))


def chat_version(conn: sqlite3.Connection, chat: sqlite3.Row) -> int:
    row = conn.execute("SELECT version FROM sandbox_chat_versions WHERE chat_ref = ?",
                       (chat["id"],)).fetchone()
    return row["version"] if row else 0


def position(conn: sqlite3.Connection, chat: sqlite3.Row) -> Position:
    """Where a reader is once it has read the chat now. The version is read
    first: a change made while the rest is read bumps it past this one, so
    the reader's next question finds it."""
    return Position(chat["id"], chat_version(conn, chat), messages.newest_message_id(conn, chat),
                    callbacks.newest_answer_seq(conn, chat),
                    chat_events.newest_event_id(conn, chat))


def changes_since(conn: sqlite3.Connection, chat: sqlite3.Row, held: Position) -> dict | None:
    """What changed after ``held``: ``{position, messages, deleted,
    callback_answers, events}`` (messages new or edited, as the user sees
    them, oldest first; deleted: message_ids), or None when the reader is so
    far behind (more than CHANGES_AT_MOST of a kind) that it should read the
    newest page again. ``held`` must be of this chat."""
    version = chat_version(conn, chat)
    revised = conn.execute(
        "SELECT message_id FROM sandbox_message_revisions WHERE chat_ref = ? AND version > ?"
        " AND message_id <= ? ORDER BY message_id LIMIT ?",
        (chat["id"], held.version, held.message_id, CHANGES_AT_MOST + 1)).fetchall()
    fresh = messages.messages_after(conn, chat, held.message_id, CHANGES_AT_MOST + 1)
    answers, answer_seq = callbacks.answers_after(conn, chat, held.answer_seq,
                                                  CHANGES_AT_MOST + 1)
    events = chat_events.events_after(conn, chat, held.event_id, CHANGES_AT_MOST + 1)
    if max(len(revised), len(fresh), len(answers), len(events)) > CHANGES_AT_MOST:
        return None
    edited, deleted = [], []
    for row in revised:
        shown = messages.find_shown(conn, chat["bot_id"], chat, row["message_id"])
        (edited.append(shown) if shown else deleted.append(row["message_id"]))
    newest = max([held.message_id, *(m["message_id"] for m in fresh)])
    return {"position": Position(chat["id"], version, newest, answer_seq,
                                 events[-1]["event_id"] if events else held.event_id),
            "messages": edited + fresh, "deleted": deleted, "callback_answers": answers,
            "events": events}


def user_chats_version(conn: sqlite3.Connection, user_id: int) -> str:
    """A value that changes whenever the user's chat list would: a chat's
    version (a message, a read, the membership), a new chat, a new bot. Each
    part an index range (``chats_by_user``) or its end."""
    chats = conn.execute(
        "SELECT COUNT(*), COALESCE(SUM(v.version), 0) FROM chats c"
        " LEFT JOIN sandbox_chat_versions v ON v.chat_ref = c.id WHERE c.user_id = ?",
        (user_id,)).fetchone()
    # Bots are never deleted but by a reset, and their ids are not reused:
    # the newest id says whether the list of bots changed.
    newest_bot = conn.execute("SELECT COALESCE(MAX(id), 0) FROM bots").fetchone()[0]
    return f"{chats[0]}.{chats[1]}.{newest_bot}"
