"""The one walk of an export (``conversation.export_chat``): the chat's
actions and the bot's calls paired into steps, each message numbered by its
place in the conversation (``{"from": "bot", "index": 1}``: the bot's first
message in the export), never by an id, so the test passes on an
installation where every id differs.

Which step a reaction follows: a message the bot sent follows the newest
action recorded before the message existed (the journal keeps the bot's
newest message_id at each action: exact); any other reaction follows the
newest action whose update the bot had received when it called (its
getUpdates answers in the log, or the webhook's deliveries), never one
before the bot's previous reaction, and an answer follows its click.

What is not the conversation is left out: a call resendCall made
(``resent_from`` in its record's detail), and what the bot did after it
received a replayed update (redeliverUpdate's, by getUpdates or by webhook)
before it received another: a fresh run never produces them, and their
messages take no place. A reaction or an action that cannot be exported
is said in a note naming its step (``gaps``), never dropped silently.
"""
from __future__ import annotations

import base64
import bisect
import json
import os
import sqlite3
from collections.abc import Mapping

from botsvc.domain import files, replays

# A file the user sent travels inside the export up to this size; a larger
# one is left out, and the file says so.
MAX_EMBEDDED_FILE_BYTES = 2 * 1024 * 1024
# And all of them together up to this much (an export is one answer, held in
# memory): the files past it are left out, and the file says so.
MAX_EMBEDDED_BYTES = 16 * 1024 * 1024
# What a message's expectation compares: what the user sees of it.
SHOWN_FIELDS = ("type", "text", "caption", "card", "reply_markup")


def params_of(call: dict) -> dict:
    """A record's parameters; a form's fields are text, a keyboard JSON text.
    Left out for size, the fields its detail's preview keeps whole."""
    params = dict(call.get("params") or {})
    if "params" not in call:
        cut = set(call.get("cut_fields") or ())
        params = {k: v for k, v in (call.get("params_preview") or {}).items() if k not in cut}
    for key in ("reply_markup", "card", "message_ids"):
        if isinstance(params.get(key), str):
            try:
                params[key] = json.loads(params[key])
            except ValueError:
                pass
    return params


def result_of(call: dict):
    """A success's result: kept, or kept whole in the detail (a message over
    the record's bound)."""
    return call["result"] if "result" in call else call.get("result_whole")


def chat_of(call: dict) -> str | None:
    """The chat a reaction changed: its chat_id parameter, else its result's."""
    chat_id = params_of(call).get("chat_id")
    if chat_id is None:
        result = result_of(call)
        first = result[0] if isinstance(result, list) and result else result
        chat_id = ((first or {}).get("chat") or {}).get("id") if isinstance(first, dict) else None
    return None if chat_id is None else str(chat_id)


def _place_of(places: dict[int, dict], message_id) -> dict | None:
    try:
        return places.get(int(message_id))
    except (TypeError, ValueError):
        return None


class Walk:
    """Walks the actions and the calls together, numbering messages by place."""

    def __init__(self, conn: sqlite3.Connection, data_dir: str, chat: sqlite3.Row,
                 kinds: Mapping[str, str], gaps: list[str]):
        self.conn, self.data_dir, self.chat, self.kinds = conn, data_dir, chat, kinds
        self.gaps = gaps                    # what could not be exported, by step
        self.places: dict[int, dict] = {}   # message_id -> {"from", "index"}
        self.counts = {"bot": 0, "user": 0}
        self.clicks: dict[str, int] = {}    # callback_query_id -> step index
        self.afters: list[int] = []         # each action's after_message_id
        self.dates: list[int] = []          # each action's date
        self.by_date = False
        self.embedded = 0                   # bytes of the files embedded so far
        self.step_name = ""                 # the step being rendered, for notes

    def name(self, message_id: int, side: str) -> dict:
        self.counts[side] += 1
        place = {"from": side, "index": self.counts[side]}
        self.places[message_id] = place
        return place

    def steps(self, events: list[dict], calls: list[dict], lead_in: int) -> list[dict]:
        """The steps, in order; the first ``lead_in`` of them marked so."""
        self.afters = [e["after_message_id"] for e in events]
        self.dates = [e["date"] for e in events]
        self.clicks = {e["callback_query_id"]: n for n, e in enumerate(events)
                       if e["kind"] == "click"}
        steps = [{"user": None, "bot": [], "_event": e} for e in events]
        self._pair(steps, events, [c for c in calls if c["method"] == "getUpdates"
                                   or self._is_reaction(c)])
        rendered = []
        for number, step in enumerate(steps):   # in order, so places number as they came
            self.step_name = f"Step {len(rendered) + 1}"
            step["user"] = self.action(step.pop("_event"), number)
            if step["user"] is None:   # left out: its reactions are not replayed either,
                continue               # so their messages take no place
            step["bot"] = [r for call in step["bot"] for r in self.reaction(call, number < lead_in)]
            if number < lead_in:
                step["lead_in"] = True
            rendered.append(step)
        return rendered

    def _pair(self, steps: list[dict], events: list[dict], mine: list[dict]) -> None:
        """Each reaction appended to the step it follows; a replay's left out."""
        by_update = {e["update"]["update_id"]: n for n, e in enumerate(events) if "update" in e}
        polled = [c for c in mine if c["method"] == "getUpdates"]
        got_ids = [u.get("update_id") for c in polled for u in _updates(c)]
        replayed = set(replays.originals(self.conn, self.chat["bot_id"],
                                         [i for i in got_ids if isinstance(i, int)]))
        deliveries = [] if polled else self._webhook_deliveries(by_update)
        replayed |= {u for _, u, is_replay in deliveries if is_replay}
        # Nothing says when the bot received its updates (a webhook whose
        # delivery records are gone): a reaction follows the newest action
        # dated at or before it.
        self.by_date = not deliveries and not polled
        delivered = -1   # the newest step whose update the bot has received
        floor = -1       # a reaction never belongs before the one the bot made before it
        answering_replay = False
        for call in mine:
            if call["method"] == "getUpdates":
                ids = [u.get("update_id") for u in _updates(call)]
                if ids:   # what the bot does next answers this batch
                    answering_replay = all(i in replayed for i in ids)
                delivered = max(delivered, *(by_update.get(i, -1) for i in ids), -1)
                continue
            if deliveries:
                seen = [(at, u) for at, u, _ in deliveries if at <= call["date"]]
                answering_replay = bool(seen) and seen[-1][1] in replayed
                delivered = max(delivered, *(by_update.get(u, -1) for _, u in seen), -1)
            if not answering_replay:
                floor = self._place_call(steps, call, max(delivered, floor))

    def _webhook_deliveries(self, by_update: dict[int, int]) -> list[tuple[int, int, bool]]:
        """``(first attempt's date, update_id, is a replay)`` of each update of
        the chat, and each replay of the bot, the webhook delivered; in the
        order they went out."""
        bot_id = self.chat["bot_id"]
        kept = replays.bot_replays(self.conn, bot_id, 1000)
        wanted = {*by_update, *(r["update_id"] for r in kept)}
        if not wanted:
            return []
        marks = ",".join("?" * len(wanted))
        rows = self.conn.execute(
            f"SELECT update_id, MIN(started_at) FROM webhook_deliveries WHERE bot_id = ?"
            f" AND update_id IN ({marks}) GROUP BY update_id", (bot_id, *wanted)).fetchall()
        replayed = {r["update_id"] for r in kept}
        return sorted((at, update_id, update_id in replayed) for update_id, at in rows)

    def _is_reaction(self, call: dict) -> bool:
        kind = self.kinds.get(call["method"])
        if kind is None or not call["ok"] or call["replayed"] or "resent_from" in call:
            return False
        if kind == "answer":
            return params_of(call).get("callback_query_id") in self.clicks
        return chat_of(call) == self.chat["chat_id"]

    def _place_call(self, steps: list[dict], call: dict, number: int) -> int:
        """Append the call to its step (the newest action it can follow);
        returns that step's index."""
        kind = self.kinds[call["method"]]
        if kind == "answer":
            number = max(number, self.clicks[params_of(call)["callback_query_id"]])
        sent = result_of(call)
        first = sent[0] if isinstance(sent, list) and sent else sent
        if kind == "send" and isinstance(first, dict):
            # Exact: the message came after the actions recorded before it
            # existed and before the others (each action records the bot's
            # newest message_id, which only grows along the journal).
            number = bisect.bisect_left(self.afters, first["message_id"]) - 1
        elif self.by_date:
            number = max(number, bisect.bisect_right(self.dates, call["date"]) - 1)
        if number >= 0:   # before the first exported action: not part of the export
            steps[number]["bot"].append(call)
        return number

    # -- what each step holds --------------------------------------------------
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
                self.gaps.append(f"Action {number + 1} clicked a message the export cannot"
                                 f" name (its sending is not in the export); it is left out.")
                return None
            return {"action": "click", "message": place, "callback_data": data}
        return self._message_action(update.get("message") or {}, event["message_id"], number)

    def _message_action(self, message: dict, message_id: int, number: int) -> dict | None:
        reply = _place_of(self.places, message.get("reply_to_message_id"))
        if message.get("media"):
            action = self._file(message, number)
            if action is None:
                return None
        else:
            action = {"action": "say", "text": message.get("text", "")}
        if reply:
            action["reply_to"] = reply
        elif message.get("reply_to_message_id") is not None:
            self.gaps.append(f"Action {number + 1} replied to a message the export cannot name;"
                             f" it is sent without the reply.")
        self.name(message_id, "user")
        return action

    def _file(self, message: dict, number: int) -> dict | None:
        row = files.find_clean_file(self.conn, None, message["media"]["file_id"])
        why = ("is gone" if row is None else "is over 2 MiB"
               if row["file_size"] > MAX_EMBEDDED_FILE_BYTES
               else "would take the export's files over 16 MiB"
               if self.embedded + row["file_size"] > MAX_EMBEDDED_BYTES else None)
        if why is not None:
            self.gaps.append(f"Action {number + 1} sent a file that {why}; it is left out.")
            return None
        self.embedded += row["file_size"]
        with open(files.storage_path(self.data_dir, row["storage_name"]), "rb") as f:
            content = base64.b64encode(f.read()).decode("ascii")
        action = {"action": "send_file", "type": message["type"],
                  "file_name": os.path.basename(row["file_name"]), "content_base64": content}
        if message.get("caption") is not None:
            action["caption"] = message["caption"]
        return action

    def reaction(self, call: dict, lead_in: bool) -> list[dict]:
        """The call's reactions. A lead-in's are counted by the replay, so one
        that names no place is kept with ``message: null``; elsewhere it is
        left out and said."""
        kind, params, result = self.kinds[call["method"]], params_of(call), result_of(call)
        if kind == "answer":
            return [{"reaction": "answer", "text": params.get("text"),
                     "show_alert": params.get("show_alert") in (True, "true", "1")}]
        if kind == "send":
            sent = result if isinstance(result, list) else [result]
            if not all(isinstance(m, dict) for m in sent):
                return self._gap(lead_in, "message", call, "what it sent was not kept")
            return [self._sent(m) for m in sent]
        if kind == "delete":
            ids = params.get("message_ids") or [params.get("message_id")]
            return [r for i in (ids if isinstance(ids, list) else [ids])
                    for r in self._named(lead_in, "delete", call, i, {})]
        if not isinstance(result, dict):
            return self._gap(lead_in, "edit", call, "what the message became was not kept")
        shown = {k: result[k] for k in SHOWN_FIELDS if k in result}
        return self._named(lead_in, "edit", call, result.get("message_id"),
                           {"method": call["method"]}, shown)

    def _named(self, lead_in: bool, kind: str, call: dict, message_id, head: dict,
               shown: dict | None = None) -> list[dict]:
        place = _place_of(self.places, message_id)
        if place is None and not lead_in:
            return self._gap(lead_in, kind, call, "its message came before the export")
        return [{"reaction": kind, **head, "message": place, **(shown or {})}]

    def _gap(self, lead_in: bool, kind: str, call: dict, why: str) -> list[dict]:
        if lead_in:
            return [{"reaction": kind, "message": None}]
        self.gaps.append(f"{self.step_name}: the bot's {call['method']} (call"
                         f" {call['call_id']}) is left out: {why}.")
        return []

    def _sent(self, message: dict) -> dict:
        place = self.name(message["message_id"], "bot")
        return {"reaction": "message", "message": place,
                **{k: message[k] for k in SHOWN_FIELDS if k in message}}


def _updates(call: dict) -> list[dict]:
    """What a getUpdates record says the bot received (its result, kept)."""
    got = result_of(call)
    return [u for u in got if isinstance(u, dict)] if isinstance(got, list) else []
