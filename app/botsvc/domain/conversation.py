"""exportChat: a user's chat with a bot as a conversation, ready to become a
test (the pytest module: ``conversation_pytest``) or a JSON transcript.
Long because it is kept whole (a little over 300 lines): reading the
journal and the log, and the one walk that pairs them and numbers the
messages, share their rules.

The user's side comes from the chat's journal (``chat_events``: Start, Stop,
Block, each message, each click, in order); the bot's side from its call
log (what the bot did: the messages it sent, edited and deleted, the
callbacks it answered). Messages are named by their place in the
conversation (``{"from": "bot", "index": 1}``: the bot's first message in
the export), never by an id, so the test passes on an installation where
every id differs.

Which step a reaction follows: a message the bot sent follows the newest
action recorded before the message existed (the journal keeps the bot's
newest message_id at each action: exact); any other reaction follows the
newest action whose update the bot had received when it called (its
getUpdates answers in the log, or the webhook's deliveries), never one
before the bot's previous reaction, and an answer follows its click.

Bounded like a page of userGetChat: the newest ``MAX_ACTIONS`` actions of
the chat (an index range of the journal) and the bot's kept call log (at
most its newest 1,000 records), whatever the chat's length.
"""
from __future__ import annotations

import base64
import bisect
import json
import os
import sqlite3

from botsvc.contract import USER_CHAT_MAX_LIMIT
from botsvc.domain import call_log, chat_events, chats, files
from botsvc.errors import invalid

FORMAT = "botsvc-transcript/1"
FORMATS = ("pytest", "transcript")
# The same bound as one page of userGetChat: the newest this many actions.
MAX_ACTIONS = USER_CHAT_MAX_LIMIT
# A file the user sent travels inside the export up to this size; a larger
# one is left out, and the file says so.
MAX_EMBEDDED_FILE_BYTES = 2 * 1024 * 1024
# And all of them together up to this much (an export is one answer, held in
# memory): the files past it are left out, and the file says so.
MAX_EMBEDDED_BYTES = 16 * 1024 * 1024

SEND_METHODS = {"sendMessage", "sendCard", "sendPhoto", "sendVoice", "sendVideo", "sendAudio",
                "sendDocument", "sendAnimation", "sendMediaGroup"}
EDIT_METHODS = {"editMessageText", "editMessageCard", "editMessageCaption", "editMessageMedia",
                "editMessageReplyMarkup"}
DELETE_METHODS = {"deleteMessage", "deleteMessages"}
REACTION_METHODS = SEND_METHODS | EDIT_METHODS | DELETE_METHODS | {"answerCallbackQuery"}
# What a message's expectation compares: what the user sees of it.
SHOWN_FIELDS = ("type", "text", "caption", "card", "reply_markup")


def export_chat(conn: sqlite3.Connection, data_dir: str, bot_id: int, user_id: int,
                after_message_id: int | None, call_log_on: bool, now: float) -> dict:
    """The conversation as a transcript (a dict), for ``after_message_id``'s
    part of the chat or the whole of it."""
    chat = chats.user_chat(conn, bot_id, user_id)   # INVALID_PARAMETER for nobody
    if after_message_id is not None and conn.execute(
            "SELECT 1 FROM messages WHERE bot_id = ? AND message_id = ? AND chat_ref = ?",
            (bot_id, after_message_id, chat["id"])).fetchone() is None:
        raise invalid("after_message_id", "after_message_id is not a message of this chat")
    events, more = _events(conn, chat, after_message_id or 0)
    notes = []
    if more:
        notes.append(f"The chat holds more actions than an export takes: only its newest"
                     f" {MAX_ACTIONS} are here.")
    if after_message_id is not None:
        notes.append("Exported from the middle of the chat: the bot starts this test without"
                     " what came before.")
    calls, covered = _calls(conn, bot_id, events, call_log_on, now)
    if not call_log_on:
        notes.append("The bot's call log is off on this installation (BOTSVC_CALL_LOG=0):"
                     " none of the bot's reactions could be exported.")
    elif not covered:
        notes.append("The bot's call log no longer covers the start of this conversation"
                     " (it keeps a bot's newest 1,000 calls for 24 hours): the bot's"
                     " reactions before its oldest kept call are missing.")
    builder = _Builder(conn, data_dir, chat, notes)
    steps = builder.steps(events, calls)
    return {"format": FORMAT, "bot": _username(conn, bot_id), "complete": not notes,
            "notes": notes, "steps": steps}


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


def _events(conn: sqlite3.Connection, chat: sqlite3.Row, after: int) -> tuple[list[dict], bool]:
    """The chat's newest MAX_ACTIONS actions after message ``after``, oldest
    first, and whether older ones (after it) were left out."""
    first = conn.execute(FIRST_EVENT_SQL, (chat["id"], after)).fetchone()
    if first is None:
        return [], False
    rows = conn.execute(NEWEST_EVENTS_SQL, (chat["id"], first[0], MAX_ACTIONS + 1)).fetchall()
    # A message of the user's at ``after`` itself is not after it.
    events = [chat_events.render(r) for r in reversed(rows[:MAX_ACTIONS])
              if not (r["kind"] == "message" and r["message_id"] <= after)]
    return events, len(rows) > MAX_ACTIONS


def _calls(conn: sqlite3.Connection, bot_id: int, events: list[dict], call_log_on: bool,
           now: float) -> tuple[list[dict], bool]:
    """The bot's kept call records, oldest first, and whether they reach back
    to the first exported action."""
    if not call_log_on or not events:
        return [], True
    oldest_kept = conn.execute(
        "SELECT call_id FROM bot_calls WHERE bot_id = ? ORDER BY call_id DESC LIMIT 1 OFFSET ?",
        (bot_id, call_log.KEPT_PER_BOT - 1)).fetchone()
    cutoff = int(now - call_log.RETENTION_SECONDS)
    rows = conn.execute("SELECT * FROM bot_calls WHERE bot_id = ? AND call_id >= ? AND date >= ?"
                        " ORDER BY call_id", (bot_id, oldest_kept[0] if oldest_kept else 0,
                                              cutoff)).fetchall()
    first = events[0]["date"]
    covered = first >= cutoff and (oldest_kept is None or rows[0]["date"] <= first)
    return [call_log.render(row) for row in rows], covered


def _place_of(places: dict[int, dict], message_id) -> dict | None:
    try:
        return places.get(int(message_id))
    except (TypeError, ValueError):
        return None


def _params(call: dict) -> dict:
    """A record's parameters; a form's fields are text, a keyboard JSON text."""
    params = dict(call.get("params") or {})
    for key in ("reply_markup", "card", "message_ids"):
        if isinstance(params.get(key), str):
            try:
                params[key] = json.loads(params[key])
            except ValueError:
                pass
    return params


class _Builder:
    """Walks the actions and the calls together, numbering messages by place."""

    def __init__(self, conn: sqlite3.Connection, data_dir: str, chat: sqlite3.Row,
                 notes: list[str]):
        self.conn, self.data_dir, self.chat, self.notes = conn, data_dir, chat, notes
        self.places: dict[int, dict] = {}   # message_id -> {"from", "index"}
        self.counts = {"bot": 0, "user": 0}
        self.clicks: dict[str, int] = {}    # callback_query_id -> step index
        self.afters: list[int] = []         # each action's after_message_id
        self.dates: list[int] = []          # each action's date
        self.by_date = False
        self.embedded = 0                   # bytes of the files embedded so far

    def name(self, message_id: int, side: str) -> dict:
        self.counts[side] += 1
        place = {"from": side, "index": self.counts[side]}
        self.places[message_id] = place
        return place

    def steps(self, events: list[dict], calls: list[dict]) -> list[dict]:
        self.afters = [e["after_message_id"] for e in events]
        self.dates = [e["date"] for e in events]
        steps = [{"user": None, "bot": [], "_event": e} for e in events]
        for number, event in enumerate(events):
            if event["kind"] == "click":
                self.clicks[event["callback_query_id"]] = number
        delivered = -1   # the newest step whose update the bot has received
        by_update = {e["update"]["update_id"]: n for n, e in enumerate(events) if "update" in e}
        webhook = self._webhook_deliveries(by_update)
        mine = [c for c in calls if c["method"] == "getUpdates" or self._is_reaction(c)]
        floor = -1   # a reaction never belongs before the one the bot made before it
        # Nothing says when the bot received its updates (a webhook whose
        # delivery records are gone): a reaction follows the newest action
        # dated at or before it.
        self.by_date = not webhook and all(c["method"] != "getUpdates" for c in mine)
        for call in mine:
            got = call.get("result") if call["method"] == "getUpdates" else None
            delivered = max(delivered, *(n for at, n in webhook if at <= call["date"]),
                            *(by_update.get(u.get("update_id"), -1)
                              for u in (got if isinstance(got, list) else [])), -1)
            if call["method"] != "getUpdates":
                floor = self._place_call(steps, call, max(delivered, floor))
        rendered = []
        for number, step in enumerate(steps):   # in order, so places number as they came
            step["user"] = self.action(step.pop("_event"), number)
            if step["user"] is None:   # left out: its reactions are not replayed either,
                continue               # so their messages take no place
            step["bot"] = [r for call in step["bot"] for r in self.reaction(call)]
            rendered.append(step)
        return rendered

    def _webhook_deliveries(self, by_update: dict[int, int]) -> list[tuple[int, int]]:
        if not by_update:
            return []
        marks = ",".join("?" * len(by_update))
        rows = self.conn.execute(
            f"SELECT update_id, MIN(started_at) FROM webhook_deliveries WHERE bot_id = ?"
            f" AND update_id IN ({marks}) GROUP BY update_id",
            (self.chat["bot_id"], *by_update)).fetchall()
        return [(at, by_update[update_id]) for update_id, at in rows]

    def _is_reaction(self, call: dict) -> bool:
        if not call["ok"] or call["replayed"] or call["method"] not in REACTION_METHODS:
            return False
        params = _params(call)
        if call["method"] == "answerCallbackQuery":
            return params.get("callback_query_id") in self.clicks
        return str(params.get("chat_id")) == self.chat["chat_id"]

    def _place_call(self, steps: list[dict], call: dict, number: int) -> int:
        """Append the call to its step (the newest action it can follow);
        returns that step's index."""
        if call["method"] == "answerCallbackQuery":
            number = max(number, self.clicks[_params(call)["callback_query_id"]])
        sent = call.get("result")
        first = sent[0] if isinstance(sent, list) and sent else sent
        if call["method"] in SEND_METHODS and isinstance(first, dict):
            # Exact: the message came after the actions recorded before it
            # existed and before the others (each action records the bot's
            # newest message_id, which only grows along the journal).
            number = bisect.bisect_left(self.afters, first["message_id"]) - 1
        elif self.by_date:
            number = max(number, bisect.bisect_right(self.dates, call["date"]) - 1)
        if number >= 0:   # before the first exported action: not part of the export
            steps[number]["bot"].append(call)
        return number

    def action(self, event: dict, number: int) -> dict | None:
        update = event.get("update") or {}
        kind = event["kind"]
        if kind in ("start", "restart", "unblock"):
            parameter = (update.get("membership") or {}).get("start_parameter")
            return {"action": "start", **({"start_parameter": parameter} if parameter else {})}
        if kind in ("stop", "block"):
            return {"action": kind}
        if kind == "click":
            place = self.places.get(event["message_id"])
            data = (update.get("callback_query") or {}).get("data")
            if place is None:
                self.notes.append(f"Action {number + 1} clicked a message from before the"
                                  f" export; it is left out.")
                return None
            return {"action": "click", "message": place, "callback_data": data}
        return self._message_action(update.get("message") or {}, event["message_id"], number)

    def _message_action(self, message: dict, message_id: int, number: int) -> dict | None:
        action: dict = {}
        reply = _place_of(self.places, message.get("reply_to_message_id"))
        if message.get("media"):
            action = self._file(message, number)
            if action is None:
                return None
        else:
            action = {"action": "say", "text": message.get("text", "")}
        if reply:
            action["reply_to"] = reply
        self.name(message_id, "user")
        return action

    def _file(self, message: dict, number: int) -> dict | None:
        row = files.find_clean_file(self.conn, None, message["media"]["file_id"])
        why = ("is gone" if row is None else "is over 2 MiB"
               if row["file_size"] > MAX_EMBEDDED_FILE_BYTES
               else "would take the export's files over 16 MiB"
               if self.embedded + row["file_size"] > MAX_EMBEDDED_BYTES else None)
        if why is not None:
            self.notes.append(f"Action {number + 1} sent a file that {why}; it is left out.")
            return None
        self.embedded += row["file_size"]
        with open(files.storage_path(self.data_dir, row["storage_name"]), "rb") as f:
            content = base64.b64encode(f.read()).decode("ascii")
        action = {"action": "send_file", "type": message["type"],
                  "file_name": os.path.basename(row["file_name"]), "content_base64": content}
        if message.get("caption") is not None:
            action["caption"] = message["caption"]
        return action

    def reaction(self, call: dict) -> list[dict]:
        method, params, result = call["method"], _params(call), call.get("result")
        if method in SEND_METHODS:
            return [self._sent(m) for m in (result if isinstance(result, list) else [result])]
        if method == "answerCallbackQuery":
            return [{"reaction": "answer", "text": params.get("text"),
                     "show_alert": params.get("show_alert") in (True, "true", "1")}]
        if method in DELETE_METHODS:
            ids = params.get("message_ids") or [params.get("message_id")]
            # A message from before the export cannot be named: left out.
            return [{"reaction": "delete", "message": place} for place in
                    (_place_of(self.places, i) for i in ids) if place is not None]
        place = _place_of(self.places, params.get("message_id"))
        if place is None:
            return []
        shown = {k: result[k] for k in SHOWN_FIELDS if isinstance(result, dict) and k in result}
        return [{"reaction": "edit", "method": method, "message": place, **shown}]

    def _sent(self, message: dict) -> dict:
        place = self.name(message["message_id"], "bot")
        return {"reaction": "message", "message": place,
                **{k: message[k] for k in SHOWN_FIELDS if k in message}}
