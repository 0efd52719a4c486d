"""exportChat: a user's chat with a bot as a conversation, ready to become a
test (the pytest module: ``conversation_pytest``) or a JSON transcript.

The user's side comes from the chat's journal (``chat_events``: Start, Stop,
Block, each message, each click, in order); the bot's side from its call
log (what the bot did: the messages it sent, edited and deleted, the
callbacks it answered). Which methods those are is the catalogue's fact
(each /v2 entry's ``reaction``), handed in as ``kinds``. Pairing the two and
numbering the messages is ``conversation_walk``'s.

A part (``after_message_id``) is replayed from where a fresh installation
begins: the chat's Start before the chosen message (or before the earliest
message a step of the part clicks or answers), its steps up to the chosen
message a lead-in whose reactions are awaited and numbered, not checked. So
``bot_message(1)`` names the same message in the export and in the replay.

Bounded like a page of userGetChat: the newest ``MAX_ACTIONS`` actions of
the chat (an index range of the journal) and the bot's kept call log (at
most its newest 1,000 records), whatever the chat's length.
"""
from __future__ import annotations

import sqlite3
from collections.abc import Mapping

from botsvc.contract import USER_CHAT_MAX_LIMIT
from botsvc.domain import call_log, chat_events, chats
from botsvc.domain.conversation_walk import Walk
from botsvc.errors import invalid

FORMAT = "botsvc-transcript/1"
FORMATS = ("pytest", "transcript")
# The same bound as one page of userGetChat: the newest this many actions.
MAX_ACTIONS = USER_CHAT_MAX_LIMIT
STARTS = ("start", "restart", "unblock")


def export_chat(conn: sqlite3.Connection, data_dir: str, bot_id: int, user_id: int,
                after_message_id: int | None, call_log_on: bool, now: float,
                kinds: Mapping[str, str]) -> dict:
    """The conversation as a transcript (a dict), for ``after_message_id``'s
    part of the chat or the whole of it. ``kinds``: ``{method: "send" |
    "edit" | "delete" | "answer"}``, the catalogue's reaction methods."""
    chat = chats.user_chat(conn, bot_id, user_id)   # INVALID_PARAMETER for nobody
    if after_message_id is not None and conn.execute(
            "SELECT 1 FROM messages WHERE bot_id = ? AND message_id = ? AND chat_ref = ?",
            (bot_id, after_message_id, chat["id"])).fetchone() is None:
        raise invalid("after_message_id", "after_message_id is not a message of this chat")
    events, more = _events(conn, chat, after_message_id or 0)
    notes, gaps = [], []
    if more:
        gaps.append(f"The chat holds more actions than an export takes: only its newest"
                    f" {MAX_ACTIONS} are here.")
    lead_in = 0
    if after_message_id is not None and events and not more:
        before = _lead_in(conn, chat, events)
        lead_in = len(before)
        notes += _part_notes(before, events)
        if before and before[0]["kind"] not in STARTS:
            gaps.append("No Start is within the actions an export reads: the test begins with"
                        " a bare Start, and the bot's messages may take other places.")
        events = before + events
    calls, covered = _calls(conn, bot_id, events, call_log_on, now)
    if not call_log_on:
        gaps.append("The bot's call log is off on this installation (BOTSVC_CALL_LOG=0):"
                    " none of the bot's reactions could be exported.")
    elif not covered:
        gaps.append("The bot's call log no longer covers the start of this conversation"
                    " (it keeps a bot's newest 1,000 calls for 24 hours): the bot's"
                    " reactions before its oldest kept call are missing.")
    walk = Walk(conn, data_dir, chat, kinds, gaps)
    steps = walk.steps(events, calls, lead_in)
    return {"format": FORMAT, "bot": _username(conn, bot_id), "complete": not gaps,
            "notes": notes + gaps, "steps": steps}


def _username(conn: sqlite3.Connection, bot_id: int) -> str:
    return conn.execute("SELECT username FROM bots WHERE id = ?", (bot_id,)).fetchone()[0]


# The journal's first event at or after a message: one seek of the place
# index (a chat's after_message_id only grows with its ids).
FIRST_EVENT_SQL = ("SELECT id FROM chat_events WHERE chat_ref = ? AND after_message_id >= ?"
                   " ORDER BY after_message_id, id LIMIT 1")
# The newest events from there: a walk of (chat_ref, id) from the newest
# end that stops after the bound, whatever the chat's length.
NEWEST_EVENTS_SQL = ("SELECT * FROM chat_events WHERE chat_ref = ? AND id >= ?"
                     " ORDER BY id DESC LIMIT ?")
# The events before one, newest first: the same index, walked the other way.
EVENTS_BEFORE_SQL = ("SELECT * FROM chat_events WHERE chat_ref = ? AND id < ?"
                     " ORDER BY id DESC LIMIT ?")


def _events(conn: sqlite3.Connection, chat: sqlite3.Row, after: int) -> tuple[list[dict], bool]:
    """The chat's newest MAX_ACTIONS actions after message ``after``, oldest
    first, and whether older ones (after it) were left out."""
    first = conn.execute(FIRST_EVENT_SQL, (chat["id"], after)).fetchone()
    if first is None:
        return [], False
    rows = conn.execute(NEWEST_EVENTS_SQL, (chat["id"], first[0], MAX_ACTIONS + 1)).fetchall()
    # A message of the user's at ``after`` itself is not after it.
    events = [_event(r) for r in reversed(rows[:MAX_ACTIONS])
              if not (r["kind"] == "message" and r["message_id"] <= after)]
    return events, len(rows) > MAX_ACTIONS


def _lead_in(conn: sqlite3.Connection, chat: sqlite3.Row, part: list[dict]) -> list[dict]:
    """The actions a replay of ``part`` must make first, oldest first: from
    the newest Start before the part, or before the oldest message the part
    clicks or replies to, whichever is earlier; none when the part begins
    with a Start of its own and names nothing older. Within the bound."""
    needed = min([_referred(e) for e in part if _referred(e)], default=None)
    if part[0]["kind"] in STARTS and (needed is None or needed > part[0]["after_message_id"]):
        return []
    rows = conn.execute(EVENTS_BEFORE_SQL, (chat["id"], part[0]["event_id"],
                                            MAX_ACTIONS - len(part))).fetchall()
    for n, row in enumerate(rows):   # newest first
        if row["kind"] in STARTS and (needed is None or row["after_message_id"] < needed):
            return [_event(r) for r in reversed(rows[:n + 1])]
    return [_event(r) for r in reversed(rows)]   # no Start kept: from the oldest


def _event(row: sqlite3.Row) -> dict:
    """A journal entry as the sandbox shows it, with the chat version it made
    (None before migration 0016): where it stands among edits and deletions;
    and when it was recorded (``recorded_ns``, None before 0019)."""
    return {**chat_events.render(row), "version": row["version"],
            "recorded_ns": row["recorded_ns"]}


def _referred(event: dict) -> int | None:
    """The message an action names: the clicked one, or the one replied to."""
    if event["kind"] == "click":
        return event.get("message_id")
    message = (event.get("update") or {}).get("message") or {}
    return message.get("reply_to_message_id")


def _part_notes(before: list[dict], part: list[dict]) -> list[str]:
    if not before:
        return ["Exported from the middle of the chat: the part begins with a Start of its own."]
    begins = ("the chat's Start before the chosen message" if before[0]["kind"] in STARTS
              else "the oldest action an export reads (no Start before it is kept)")
    return [f"Exported from the middle of the chat: the test first replays the chat from"
            f" {begins} up to it ({len(before)} action(s), a lead-in whose reactions are"
            f" awaited but not checked), so that the bot is where it was and messages keep"
            f" their places."]


def _calls(conn: sqlite3.Connection, bot_id: int, events: list[dict], call_log_on: bool,
           now: float) -> tuple[list[dict], bool]:
    """The bot's kept call records with their detail, oldest first (read by
    the call log's own page, its bounds its own), and whether they reach back
    to the first exported action."""
    if not call_log_on or not events:
        return [], True
    kept = call_log.calls_page(conn, bot_id, call_log.KEPT_PER_BOT, None, now,
                               detail=True)["calls"]
    _stamp(conn, bot_id, kept)
    first = events[0]["date"]
    if first < call_log.oldest_kept_date(now):
        return kept[::-1], False
    # All the bot's kept calls are here: none older was dropped for the count.
    covered = len(kept) < call_log.KEPT_PER_BOT or kept[-1]["date"] <= first
    return kept[::-1], covered


def _stamp(conn: sqlite3.Connection, bot_id: int, calls: list[dict]) -> None:
    """Each call with when it arrived and when its answer was made
    (``started_ns``, ``answered_ns``: None before migration 0019), which no
    view of the log shows: read in the same range of the bot's index."""
    if not calls:
        return
    stamps = {row[0]: (row[1], row[2]) for row in conn.execute(
        "SELECT call_id, started_ns, answered_ns FROM bot_calls WHERE bot_id = ?"
        " AND call_id BETWEEN ? AND ?", (bot_id, calls[-1]["call_id"], calls[0]["call_id"]))}
    for call in calls:
        call["started_ns"], call["answered_ns"] = stamps.get(call["call_id"], (None, None))
