"""The one walk of an export (``conversation.export_chat``): the chat's
actions and the bot's calls paired into steps, each message numbered by its
place in the conversation by ``conversation_steps``, never by an id, so the
test passes on an installation where every id differs.

Which step a reaction follows: a message the bot sent follows the newest
action recorded before the message existed (the journal keeps the bot's
newest message_id at each action); a message's last edit or deletion
follows the newest action made before it (the chat's version at each action
and at the change); either, when the bot called before that action was
recorded (the call held, or slow to arrive whole, while the user went on),
the newest action recorded before the call arrived; any other reaction (an earlier edit of a message edited
again, an answer) follows the newest action whose update the bot had
received when it called, never one before the bot's previous reaction, and
an answer follows its click. All three are exact, whatever second each is
dated to. "Had received when it called" is read from stamps of one clock
(``clock.order_stamp``: the machine's wall clock in nanoseconds, which every
worker reads alike and advanceClock does not move), each taken on one side
of a causal link: a getUpdates answer's as it is made, before it is sent,
and a webhook attempt's before its request goes out, against the call's as
it arrives. The bot can act on an update only after the answer or request
carrying it exists, so a call is never placed after an update it could not
have had, however the log's records were written (side by side, a held
call's record lands after a later poll's). The one moment this cannot tell
apart: a call arriving between an answer made and the bot reading it (a bot
calling from another thread just then) counts that answer's updates as had. With the webhook's delivery
records gone, a reaction follows the newest action journaled before the call
arrived (an action's stamp is taken in its transaction, before its update
exists for the bot). Records from before migration 0019 have no stamps:
theirs are placed as before, getUpdates by the log's order, deliveries and
the journal by their dates, to the second.

What is not the conversation is left out: a call resendCall made
(``resent_from`` in its record's detail), and what the bot did after it
received a replayed update (redeliverUpdate's, by getUpdates or by webhook)
before it received another: a fresh run never produces them, and their
messages take no place. A reaction or an action that cannot be exported
is said in a note naming its step (``gaps``), never dropped silently.
"""
from __future__ import annotations

import bisect
import sqlite3
from collections.abc import Mapping

from botsvc.domain import replays
from botsvc.domain.conversation_steps import StepWriter, chat_of, params_of, result_of


class Walk(StepWriter):
    """Walks the actions and the calls together; writes each step as a
    StepWriter."""

    def __init__(self, conn: sqlite3.Connection, data_dir: str, chat: sqlite3.Row,
                 kinds: Mapping[str, str], gaps: list[str]):
        super().__init__(conn, data_dir, chat, kinds, gaps)
        self.clicks: dict[str, int] = {}    # callback_query_id -> step index
        self.afters: list[int] = []         # each action's after_message_id
        self.dates: list[int] = []          # each action's date
        self.recorded: list[int] = []       # each action's recorded_ns, when all have one
        self.versions: list[int] = []       # each action's chat version, when all have one
        self.exact: dict[int, int] = {}     # call_id -> its step, by the chat's versions
        self.by_date = False

    def steps(self, events: list[dict], calls: list[dict], lead_in: int) -> list[dict]:
        """The steps, in order; the first ``lead_in`` of them marked so."""
        self.afters = [e["after_message_id"] for e in events]
        self.dates = [e["date"] for e in events]
        if all(e.get("recorded_ns") is not None for e in events):
            self.recorded = [e["recorded_ns"] for e in events]
        if all(e.get("version") is not None for e in events):
            self.versions = [e["version"] for e in events]
            self.exact = self._placed_by_version(calls)
        self.clicks = {e["callback_query_id"]: n for n, e in enumerate(events)
                       if e["kind"] == "click"}
        steps = [{"user": None, "bot": [], "_event": e} for e in events]
        self._pair(steps, events, _in_order([c for c in calls if c["method"] == "getUpdates"
                                             or self._is_reaction(c)]))
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
        replayed |= {u for _, _, u, is_replay in deliveries if is_replay}
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
                seen = [u for at, ns, u, _ in deliveries if _had(at, ns, call)]
                answering_replay = bool(seen) and seen[-1] in replayed
                delivered = max(delivered, *(by_update.get(u, -1) for u in seen), -1)
            if not answering_replay:
                floor = self._place_call(steps, call, delivered, floor)

    def _placed_by_version(self, calls: list[dict]) -> dict[int, int]:
        """``{call_id: step}`` for each message's last edit or deletion in the
        log: the chat version it made (sandbox_message_revisions keeps a
        message's last) against each action's, so exactly after the actions
        before it, whatever second each is dated to. Earlier edits of the same
        message are placed by the other rules."""
        last: dict[int, int] = {}   # message_id -> the call that last changed it
        for call in calls:
            if (self.kinds.get(call["method"]) in ("edit", "delete") and call["ok"]
                    and not call["replayed"] and chat_of(call) == self.chat["chat_id"]):
                for message_id in _targets(call):
                    last[message_id] = call["call_id"]
        if not last:
            return {}
        marks = ",".join("?" * len(last))
        rows = self.conn.execute(
            f"SELECT message_id, version FROM sandbox_message_revisions WHERE chat_ref = ?"
            f" AND message_id IN ({marks})", (self.chat["id"], *last)).fetchall()
        exact: dict[int, int] = {}
        for message_id, version in rows:
            number = bisect.bisect_left(self.versions, version) - 1
            call_id = last[message_id]
            exact[call_id] = min(exact.get(call_id, number), number)
        return exact

    def _webhook_deliveries(self, by_update: dict[int, int]
                            ) -> list[tuple[int, int | None, int, bool]]:
        """``(first attempt's date, its started_ns, update_id, is a replay)``
        of each update of the chat, and each replay of the bot, the webhook
        delivered; in the order they went out (by their stamps when all have
        one: dates say only the second)."""
        bot_id = self.chat["bot_id"]
        kept = replays.bot_replays(self.conn, bot_id, 1000)
        wanted = {*by_update, *(r["update_id"] for r in kept)}
        if not wanted:
            return []
        marks = ",".join("?" * len(wanted))
        rows = self.conn.execute(
            f"SELECT update_id, MIN(started_at), MIN(started_ns) FROM webhook_deliveries"
            f" WHERE bot_id = ? AND update_id IN ({marks}) GROUP BY update_id",
            (bot_id, *wanted)).fetchall()
        replayed = {r["update_id"] for r in kept}
        stamped = all(ns is not None for _, _, ns in rows)
        return sorted(((at, ns, update_id, update_id in replayed) for update_id, at, ns in rows),
                      key=lambda d: (d[1], d[2]) if stamped else (d[0], d[2]))

    def _is_reaction(self, call: dict) -> bool:
        kind = self.kinds.get(call["method"])
        if kind is None or not call["ok"] or call["replayed"] or "resent_from" in call:
            return False
        if kind == "answer":
            return params_of(call).get("callback_query_id") in self.clicks
        return chat_of(call) == self.chat["chat_id"]

    def _place_call(self, steps: list[dict], call: dict, delivered: int, floor: int) -> int:
        """Append the call to its step (the newest action it can follow);
        returns that step's index."""
        kind, number = self.kinds[call["method"]], max(delivered, floor)
        if kind == "answer":
            number = max(number, self.clicks[params_of(call)["callback_query_id"]])
        sent = result_of(call)
        first = sent[0] if isinstance(sent, list) and sent else sent
        if kind == "send" and isinstance(first, dict):
            # Exact: the message came after the actions recorded before it
            # existed and before the others (each action records the bot's
            # newest message_id, which only grows along the journal); and
            # before an action recorded while the call was on its way.
            number = self._called_before(
                call, bisect.bisect_left(self.afters, first["message_id"]) - 1)
        elif call["call_id"] in self.exact:   # exact too (a delivery's date is not)
            number = self._called_before(call, self.exact[call["call_id"]])
        elif self.by_date:
            number = max(number, self._made_before(call))
        if number >= 0:   # before the first exported action: not part of the export
            steps[number]["bot"].append(call)
        return number

    def _called_before(self, call: dict, number: int) -> int:
        """``number`` (the step a change follows, by when it was made), or an
        earlier step when the bot called before that step's action was
        recorded (a call held, or slow to arrive whole, while the user went
        on): it cannot answer an action that did not exist yet. Unchanged
        without stamps."""
        if not self.recorded or call.get("started_ns") is None:
            return number
        return min(number, bisect.bisect_left(self.recorded, call["started_ns"]) - 1)

    def _made_before(self, call: dict) -> int:
        """The newest action recorded before the call arrived: by their
        stamps when all have one (the action's, taken in its transaction,
        is before the bot can have known of it), else by their dates."""
        if self.recorded and call.get("started_ns") is not None:
            return bisect.bisect_left(self.recorded, call["started_ns"]) - 1
        return bisect.bisect_right(self.dates, call["date"]) - 1


def _in_order(calls: list[dict]) -> list[dict]:
    """The bot's getUpdates and reactions in the order the bot could act on
    them: a getUpdates at the moment its answer was made (the bot acts on
    its updates after), any other call at its arrival (``answered_ns``,
    ``started_ns``: one clock every worker reads). When one has no stamp
    (before migration 0019), in the log's order, the order records were
    written: that of the calls, unless two ran side by side."""
    keys = [c.get("answered_ns") if c["method"] == "getUpdates" else c.get("started_ns")
            for c in calls]
    if None in keys:
        return calls
    return [call for _, call in sorted(zip(keys, calls, strict=True), key=lambda p: p[0])]


def _had(at: int, ns: int | None, call: dict) -> bool:
    """Whether a webhook delivery (its first attempt's date and stamp) went
    out before the call: by the stamps when both have one (the attempt's is
    taken before the request goes out, the call's as it arrives), else by
    the second each is dated to."""
    if ns is not None and call.get("started_ns") is not None:
        return ns < call["started_ns"]
    return at <= call["date"]


def _targets(call: dict) -> list[int]:
    """The messages an edit or a deletion changed, by message_id."""
    params, result = params_of(call), result_of(call)
    ids = params.get("message_ids") or [
        result.get("message_id") if isinstance(result, dict) else params.get("message_id")]
    out = []
    for message_id in ids if isinstance(ids, list) else [ids]:
        try:
            out.append(int(message_id))
        except (TypeError, ValueError):
            pass
    return out


def _updates(call: dict) -> list[dict]:
    """What a getUpdates record says the bot received (its result, kept)."""
    got = result_of(call)
    return [u for u in got if isinstance(u, dict)] if isinstance(got, list) else []
