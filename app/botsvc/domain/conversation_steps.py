"""What each step of an exported conversation holds (the walk,
``conversation_walk``, decides which step): the user's action and the bot's
reactions as the transcript writes them, each message named by its place
(``{"from": "bot", "index": 1}``: the bot's first message in the export),
never by an id; a file the user sent embedded. What cannot be exported is
said in a note naming its step or action (``gaps``), never dropped.

And how a call record reads: its parameters (``params_of``), its result
(``result_of``, kept whole in its detail when over the record's bound) and
its chat (``chat_of``), for the export and for the replay alike.
"""
from __future__ import annotations

import base64
import json
import os
import sqlite3
from collections.abc import Mapping

from botsvc.domain import files

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


class StepWriter:
    """Writes steps' actions and reactions, numbering messages by place."""

    def __init__(self, conn: sqlite3.Connection, data_dir: str, chat: sqlite3.Row,
                 kinds: Mapping[str, str], gaps: list[str]):
        self.conn, self.data_dir, self.chat, self.kinds = conn, data_dir, chat, kinds
        self.gaps = gaps                    # what could not be exported, by step
        self.places: dict[int, dict] = {}   # message_id -> {"from", "index"}
        self.counts = {"bot": 0, "user": 0}
        self.embedded = 0                   # bytes of the files embedded so far
        self.step_name = ""                 # the step being rendered, for notes

    def name(self, message_id: int, side: str) -> dict:
        self.counts[side] += 1
        place = {"from": side, "index": self.counts[side]}
        self.places[message_id] = place
        return place

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
