"""One update's path, for the inspector: ``GET chats/<user>/<bot>/path`` with
one of ``event_id`` (a user's action), ``update_id`` (an update of the chat,
a replay included), ``message_id`` (a user's message: its update; a bot's
message: the update the call that sent it answered) or ``call_id`` (a call
of the bot: the update it answered).

The answer: the action (its journal event and date) or, for a replay, the
update it repeats; its delivery (the getUpdates call whose result held it,
or the webhook attempts, the first that succeeded delivering it) and how
many seconds after the action; the bot's reaction: the calls after that
delivery and before the chat's next update was delivered that name the chat
(``chat_id`` in their parameters or results, or the click's
callback_query_id); and the update's replays. Computed from what is kept
(the chat's journal, the replay marks, the call log through getBotCalls,
the delivery records through getWebhookDeliveries), each read bounded:
what is older than the call log's window has no delivery shown.

``GET bots/<bot>/replays``: the bot's kept replay marks (``{replays:
[{update_id, replay_of, created_at}]}``, the newest 500), for the call list
to mark the replays among what a getUpdates returned.

``GET bots/<bot>/attempts/<update_id>/<attempt>``: one webhook attempt's
record with its request and response (getWebhookDeliveries ``detail:
true``) among the newest 1,000, ``{attempt: record | null, detail_kept}``;
``detail_kept`` is false where the delivery records keep no request or
response (the method takes no ``detail``), and the record is then the plain one.
"""
from __future__ import annotations

from flask import Response, request

from botsvc.db import get_db
from botsvc.domain import bots, chat_events, chats, replays
from botsvc.errors import ApiError, ErrorCode, invalid
from botsvc.sandbox import bp, calls, json_ok
from botsvc.sandbox.chat import CALL_LOG_PAGE, calls_about

JOURNAL_READ = 500        # the chat's newest actions that queued an update
REPLAYS_READ = 500        # the bot's newest replays
DELIVERY_PAGES = 10       # getWebhookDeliveries pages of 100
REACTIONS_SHOWN = 50
_KEYS = ("event_id", "update_id", "message_id", "call_id")


@bp.route("/chats/<int:user_id>/<int:bot_id>/path")
def update_path(user_id: int, bot_id: int) -> Response:
    conn = get_db()
    chat = chats.user_chat(conn, bot_id, user_id)
    key, value = _asked()
    trail = Trail(conn, chat, bot_id)
    call_id = value if key == "call_id" else None
    update_id: int | None
    if key == "event_id":
        event = chat_events.find_event(conn, chat, value)
        if event is None or "update" not in event:
            raise invalid("event_id", "No action of this chat that queued an update has this id")
        update_id = event["update"]["update_id"]
    elif key == "update_id":
        update_id = value
    elif key == "message_id":
        update_id, call_id = _of_message(conn, chat, trail, value)
    else:
        update_id = trail.answered_by(value)
    if update_id not in trail.updates:
        raise invalid(key, "No kept update of this chat goes with this " + key)
    return json_ok({**trail.path(update_id), "call_id": call_id})


@bp.route("/bots/<int:bot_id>/replays")
def bot_replays(bot_id: int) -> Response:
    conn = get_db()
    bots.require_bot(conn, bot_id)
    return json_ok({"replays": replays.bot_replays(conn, bot_id, REPLAYS_READ)})


@bp.route("/bots/<int:bot_id>/attempts/<int:update_id>/<int:attempt>")
def webhook_attempt(bot_id: int, update_id: int, attempt: int) -> Response:
    bots.require_bot(get_db(), bot_id)
    try:
        found = _attempts(bot_id, {update_id}, detail=True)
        detail_kept = True
    except ApiError as error:
        if error.code != ErrorCode.INVALID_PARAMETER or error.parameters.get("field") != "detail":
            raise
        found, detail_kept = _attempts(bot_id, {update_id}), False
    record = next((a for a in found.get(update_id, []) if a["attempt"] == attempt), None)
    return json_ok({"attempt": record, "detail_kept": detail_kept})


def _asked() -> tuple[str, int]:
    given = [k for k in _KEYS if k in request.args]
    if len(given) != 1:
        raise invalid("event_id", "Give one of " + ", ".join(_KEYS))
    text = request.args[given[0]]
    if not text.isdigit() or len(text) > 18 or int(text) < 1:
        raise invalid(given[0], f"{given[0]} must be a positive integer")
    return given[0], int(text)


def _of_message(conn, chat, trail: Trail, message_id: int) -> tuple[int | None, int | None]:
    """A user's message: its update. A bot's: the update answered by the call
    that sent it (None when neither is kept)."""
    for event in chat_events.events_of_message(conn, chat, message_id):
        if event["kind"] != "click" and "update" in event:
            return event["update"]["update_id"], None
    sender = next((c["call"] for c in calls_about(chat["bot_id"], chat["chat_id"], message_id)
                   if c["kind"] == "sent"), None)
    if sender is None:
        raise invalid("message_id", "Neither an update nor a kept call goes with this message")
    return trail.answered_by(sender["call_id"]), sender["call_id"]


class Trail:
    """The chat's kept updates, and the bot's calls and delivery attempts,
    each read once, bounded."""

    def __init__(self, conn, chat, bot_id: int):
        self.chat_id = chat["chat_id"]
        self.updates: dict[int, dict] = {}
        self.queries: dict[int, str | None] = {}   # a click's callback_query id
        for event in replays.journal_updates(conn, chat["id"], JOURNAL_READ):
            self.updates[event["update_id"]] = {
                "replay_of": None, "queued_at": event["date"],
                "action": {k: event[k] for k in ("event_id", "kind", "date")}}
            self.queries[event["update_id"]] = event["callback_query_id"]
        for replay in replays.bot_replays(conn, bot_id, REPLAYS_READ):
            original = replay["replay_of"]
            if original in self.updates:   # oldest first: chains follow
                self.updates[replay["update_id"]] = {
                    "replay_of": original, "queued_at": replay["created_at"], "action": None}
                self.queries[replay["update_id"]] = self.queries[original]
        self.calls = _all_calls(bot_id)
        self.deliveries = self._deliveries(bot_id)

    def _deliveries(self, bot_id: int) -> dict[int, dict]:
        """Each of the chat's delivered updates: how, when, and its place
        ``at`` (date, call_id) among the calls (an attempt sorts before the
        calls of its second: the bot's calls answer it)."""
        found: dict[int, dict] = {}
        for call in self.calls:
            if call["method"] != "getUpdates" or not isinstance(call.get("result"), list):
                continue
            for update in call["result"]:
                update_id = update.get("update_id") if isinstance(update, dict) else None
                if update_id in self.updates and update_id not in found:
                    found[update_id] = {"by": "getUpdates", "call_id": call["call_id"],
                                        "date": call["date"], "at": (call["date"], call["call_id"])}
        for update_id, attempts in _attempts(bot_id, self.updates).items():
            delivered = next((a for a in attempts if _succeeded(a)), None)
            hook = {"by": "webhook", "attempts": attempts,
                    "date": delivered["started_at"] if delivered else None,
                    "at": (delivered["started_at"], -1) if delivered else None}
            if update_id not in found or (hook["at"] and hook["at"] < found[update_id]["at"]):
                found[update_id] = hook
        return found

    def answered_by(self, call_id: int) -> int | None:
        """The chat update whose delivery came last before the call."""
        call = next((c for c in self.calls if c["call_id"] == call_id), None)
        if call is None:
            raise invalid("call_id", "No kept call of this bot has this call_id")
        at = (call["date"], call["call_id"])
        before = [(d["at"], u) for u, d in self.deliveries.items() if d["at"] and d["at"] < at]
        return max(before)[1] if before else None

    def path(self, update_id: int) -> dict:
        known = self.updates[update_id]
        delivery = self.deliveries.get(update_id)
        reactions, cut = self._reactions(update_id, delivery)
        shown = None
        if delivery is not None:
            shown = {k: v for k, v in delivery.items() if k != "at"}
            if delivery["date"] is not None:
                shown["after_seconds"] = delivery["date"] - known["queued_at"]
        return {"chat_id": self.chat_id, "update_id": update_id, **known, "delivery": shown,
                "reactions": reactions, "reactions_cut": cut, "kept_calls": len(self.calls),
                "replays": [{"update_id": u, "queued_at": r["queued_at"],
                             "delivered": self.deliveries.get(u, {}).get("date")}
                            for u, r in self.updates.items() if r["replay_of"] == update_id]}

    def _reactions(self, update_id: int, delivery: dict | None) -> tuple[list[dict], bool]:
        if delivery is None or delivery["at"] is None:
            return [], False
        start = delivery["at"]
        later = [d["at"] for u, d in self.deliveries.items()
                 if u != update_id and d["at"] and d["at"] > start]
        end = min(later) if later else None
        query = self.queries[update_id]
        found = [c for c in self.calls if c["method"] != "getUpdates"
                 and start < (c["date"], c["call_id"]) and (end is None or
                                                            (c["date"], c["call_id"]) < end)
                 and _names_chat(c, self.chat_id, query)]
        return found[:REACTIONS_SHOWN], len(found) > REACTIONS_SHOWN


def _all_calls(bot_id: int) -> list[dict]:
    """The bot's kept calls (at most the log's 1,000), oldest first."""
    found, cursor = [], None
    while True:
        page = calls.run("getBotCalls", {"bot_id": bot_id, "limit": CALL_LOG_PAGE,
                                         **({"cursor": cursor} if cursor else {})})
        found.extend(page["calls"])
        cursor = page["next_cursor"]
        if cursor is None:
            return found[::-1]


def _attempts(bot_id: int, wanted, detail: bool = False) -> dict[int, list[dict]]:
    """The kept webhook attempts of the wanted updates, oldest first."""
    found: dict[int, list[dict]] = {}
    cursor = None
    for _ in range(DELIVERY_PAGES):
        page = calls.run("getWebhookDeliveries", {"bot_id": bot_id, "limit": 100,
                                                  **({"detail": True} if detail else {}),
                                                  **({"cursor": cursor} if cursor else {})})
        for attempt in page["deliveries"]:
            if attempt["update_id"] in wanted:
                found.setdefault(attempt["update_id"], []).insert(0, attempt)
        cursor = page["next_cursor"]
        if cursor is None:
            break
    return found


def _succeeded(attempt: dict) -> bool:
    return "error" not in attempt and 200 <= attempt.get("http_status", 0) < 300


def _names_chat(call: dict, chat_id: str, query_id: str | None) -> bool:
    params = call.get("params") or {}
    if params.get("chat_id") == chat_id:
        return True
    if query_id is not None and params.get("callback_query_id") == query_id:
        return True
    result = call.get("result")
    return any(isinstance(m, dict) and (m.get("chat") or {}).get("id") == chat_id
               for m in (result if isinstance(result, list) else [result]))
