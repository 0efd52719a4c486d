"""No hot query scans a large table: each statement the service runs while it
serves calls (every /v2 method, the operator's user-side methods, the
sandbox's chat, the background jobs' passes) is captured as SQLite runs it
(``set_trace_callback`` on every connection the app opens) and planned with
``EXPLAIN QUERY PLAN``; a ``SCAN`` of a table that grows with the
installation fails the test, naming the call and the statement.

The statements are not listed here: a new method, or a new query in an old
one, is planned the day it appears. The test also fails if a /v2 method was
not called, so the catalogue cannot outgrow it. Without ANALYZE statistics
(the service never gathers them) SQLite plans from the schema alone, so
the plan here is the plan of an installation of any size.
"""
from __future__ import annotations

import re

import pytest

from botsvc.api.registry import METHODS
from botsvc.db import Connection
from botsvc.jobs import run_job
from botsvc.jobs.schedule import DELIVER_BROADCASTS, DELIVER_WEBHOOKS, JOBS
from tests.support.contract import ADMIN_TOKEN, BotClient, Operator
from tests.support.media_files import image_bytes, multipart

# Tables whose rows grow with history, members or traffic.
LARGE_TABLES = {"messages", "updates", "chats", "users", "bots", "broadcasts",
                "broadcast_recipients", "callback_queries", "idempotency_keys", "files",
                "webhook_deliveries", "webhooks", "sandbox_chat_versions", "rate_limits",
                "update_replays"}
# A scan a call may make, with the reason it does not grow with history.
ALLOWED_SCANS: dict[tuple[str, str], str] = {
    (page, table): "the messenger page lists every user and every bot in its sidebars: "
                   "it grows with people and bots, not with history"
    for page in ("sandbox chat page", "sandbox chat list") for table in ("users", "bots")}
_SKIP = re.compile(r"^\s*(BEGIN|COMMIT|ROLLBACK|SAVEPOINT|RELEASE|PRAGMA)\b", re.I)
_TABLE_REF = re.compile(r"\b(?:FROM|JOIN|UPDATE|INTO)\s+([A-Za-z_]\w*)(?:\s+(?:AS\s+)?"
                        r"(?!WHERE|ON|SET|JOIN|LEFT|INNER|CROSS|ORDER|GROUP|LIMIT|VALUES|"
                        r"USING|SELECT|DEFAULT)([A-Za-z_]\w*))?", re.I)
# SEARCH is a lookup; SCAN reads the table, or an index, whole: a partial
# index holds only the rows its WHERE admits (unfinished broadcasts, running
# claims), which do not grow with history.
_SCAN = re.compile(r"^SCAN (\w+)(?: USING (?:COVERING )?INDEX (\w+))?")
# A SEARCH of the table by its own key with ranges alone (``rowid>?``): it
# walks from that key to the end of the table, whatever else the query asks.
# (A range on an index made for it, such as the age indexes of the clean-up
# jobs, reads the rows it is after.)
_RANGE_ONLY = re.compile(r"^SEARCH (\w+) USING (?:INTEGER )?PRIMARY KEY \((?:(?!=\?)[^)])*\)$")


@pytest.fixture
def scanner_settings(offline_scanner) -> dict:
    return offline_scanner


class Capture:
    """Every statement run on a connection of the app, under the label of
    the call that ran it (None: set-up, not checked)."""

    def __init__(self):
        self.label: str | None = None
        self.statements: dict[str, set[str]] = {}

    def __call__(self, sql: str) -> None:
        if self.label is not None and not _SKIP.match(sql):
            self.statements.setdefault(self.label, set()).add(sql)


@pytest.fixture
def capture(monkeypatch) -> Capture:
    captured = Capture()
    original = Connection.__init__

    def traced(self, *args, **kwargs):
        original(self, *args, **kwargs)
        self.set_trace_callback(captured)
    monkeypatch.setattr(Connection, "__init__", traced)
    # Connections kept open by this thread from before are opened again, traced.
    monkeypatch.setattr("botsvc.db.connection._thread.conn", None, raising=False)
    return captured


def full_scans(conn, sql: str) -> list[str]:
    """How ``sql`` reads a large table whole (or all of one bot's rows, or
    every row past a key), one line each: a SCAN; a SEARCH constrained by
    ranges alone (``rowid>?`` walks to the end of the table); or a sort of
    what it read (``USE TEMP B-TREE``: a page that sorts reads every match)."""
    partial = {name for name, index_sql in conn.execute(
        "SELECT name, sql FROM sqlite_master WHERE type = 'index' AND sql IS NOT NULL")
        if re.search(r"\bWHERE\b", index_sql, re.I)}
    aliases = {}
    for table, alias in _TABLE_REF.findall(sql):
        aliases[table.lower()] = table.lower()
        if alias:
            aliases[alias.lower()] = table.lower()
    found = []
    for _id, _parent, _unused, detail in conn.execute(f"EXPLAIN QUERY PLAN {sql}"):
        scan, search = _SCAN.match(detail), _RANGE_ONLY.match(detail)
        if scan and scan.group(2) in partial:
            continue   # a partial index holds only the rows its WHERE admits
        match = scan or search
        if match and aliases.get(match.group(1).lower(), match.group(1).lower()) in LARGE_TABLES:
            found.append(detail)
        elif detail.startswith("USE TEMP B-TREE") and any(
                table in LARGE_TABLES for table in aliases.values()):
            found.append(detail)
    return found


def _table_of(detail: str) -> str:
    return detail.split()[1] if detail.startswith(("SCAN", "SEARCH")) else detail


class Caller:
    """The test's calls, each under its label: the bot's /v2 calls (named in
    ``called``), the operator's, the jobs' passes, the sandbox's pages."""

    def __init__(self, app, capture: Capture):
        self.app, self.capture, self.client = app, capture, app.test_client()
        self.operator = Operator(self.client)
        created = self.operator("createBot", username="plans_bot")
        self.bot = BotClient(self.client, created["bot"], created["token"])
        self.other = self.operator("createBot", username="other_plans_bot")
        self.users = [self.operator("createUser")["user_id"] for _ in range(3)]
        self.chats = [self.operator("userStart", user_id=u, bot_id=self.bot.id)["chat_id"]
                      for u in self.users]
        self.operator("userStart", user_id=self.users[0], bot_id=self.other["bot"]["id"])
        self.called: set[str] = set()

    def labelled(self, label: str, run):
        self.capture.label = label
        try:
            return run()
        finally:
            self.capture.label = None

    def v2(self, method: str, /, **params):
        self.called.add(method)
        return self.labelled(method, lambda: self.bot.call(method, params)).get_json()

    def upload(self, method: str, field: str, **params):
        self.called.add(method)
        return self.labelled(method, lambda: multipart(
            self.bot, method, {field: (image_bytes("PNG"), "dot.png")}, **params)).get_json()

    def operate(self, method: str, /, **params):
        return self.labelled(method, lambda: self.operator(method, **params))

    def job(self, name):
        return self.labelled(getattr(name, "name", name), lambda: run_job(self.app, name))


def test_no_hot_query_scans_a_large_table(make_app, capture):
    app = make_app(test_tools=True, webhook_allow_private=True, history_retention_days=1)
    calls = Caller(app, capture)
    sent = sends_and_edits(calls)
    media(calls)
    updates = clicks_and_updates(calls, sent)
    subscribers_and_broadcasts(calls)
    webhooks_and_replays(calls, updates)
    sandbox_pages(calls, updates)
    for job in JOBS:   # every listed job's pass, the deliveries above included
        calls.job(job)

    assert calls.called == set(METHODS), \
        f"methods this test does not call: {set(METHODS) - calls.called}"
    import sqlite3
    conn = sqlite3.connect(app.config["SETTINGS"].db_path)
    scans = [f"{label}: {detail} in {sql}"
             for label, statements in sorted(capture.statements.items())
             for sql in sorted(statements)
             for detail in full_scans(conn, sql)
             if (label, _table_of(detail)) not in ALLOWED_SCANS]
    conn.close()
    assert not scans, "full scans of large tables in hot queries:\n" + "\n".join(scans)


KEYBOARD = {"inline_keyboard": [[{"text": "Go", "callback_data": "go"}]]}


def sends_and_edits(calls: Caller) -> dict:
    """The bot's reads, text and card sends and edits; the first message sent."""
    v2, chat = calls.v2, calls.chats[0]
    v2("getMe")
    v2("getChat", chat_id=chat)
    v2("getChatMember", chat_id=chat)
    sent = v2("sendMessage", chat_id=chat, text="hello", reply_markup=KEYBOARD)["result"]
    v2("sendMessage", chat_id=chat, text="again", reply_to_message_id=sent["message_id"])
    card = v2("sendCard", chat_id=chat, card={"type": "info", "title": "Card"})["result"]
    v2("editMessageText", chat_id=chat, message_id=sent["message_id"], text="edited")
    v2("editMessageReplyMarkup", chat_id=chat, message_id=sent["message_id"],
       reply_markup=KEYBOARD)
    v2("editMessageCard", chat_id=chat, message_id=card["message_id"],
       card={"type": "info", "title": "Edited"})
    v2("deleteMessage", chat_id=chat, message_id=card["message_id"])
    return sent


def media(calls: Caller) -> None:
    """An upload, every media send by file_id and one by upload, and the media edits."""
    v2, chat = calls.v2, calls.chats[0]
    file = calls.upload("uploadFile", "file")["result"]
    v2("getFile", file_id=file["file_id"])
    photo = v2("sendPhoto", chat_id=chat, photo=file["file_id"], caption="a dot")["result"]
    calls.upload("sendPhoto", "photo", chat_id=chat)
    for method, field in (("sendVoice", "voice"), ("sendVideo", "video"),
                          ("sendAudio", "audio"), ("sendDocument", "document"),
                          ("sendAnimation", "animation")):
        v2(method, chat_id=chat, **{field: file["file_id"]})
    v2("sendMediaGroup", chat_id=chat, media=[{"type": "photo", "media": file["file_id"]},
                                              {"type": "photo", "media": file["file_id"]}])
    v2("editMessageCaption", chat_id=chat, message_id=photo["message_id"], caption="new")
    v2("editMessageMedia", chat_id=chat, message_id=photo["message_id"],
       media={"type": "photo", "media": file["file_id"]})


def clicks_and_updates(calls: Caller, sent: dict) -> list[dict]:
    """A click and a message of the user, polled and answered; the updates."""
    v2, user, bot_id = calls.v2, calls.users[0], calls.bot.id
    query = calls.operate("userClickButton", user_id=user, bot_id=bot_id,
                          message_id=sent["message_id"], callback_data="go")
    calls.operate("userSendMessage", user_id=user, bot_id=bot_id, text="hi bot")
    updates = v2("getUpdates")["result"]
    v2("getUpdates", offset=updates[-1]["update_id"] + 1)
    v2("answerCallbackQuery", callback_query_id=query["callback_query_id"], text="ok")
    v2("deleteMessages", chat_id=calls.chats[0], message_ids=[sent["message_id"]])
    return updates


def subscribers_and_broadcasts(calls: Caller) -> None:
    v2 = calls.v2
    v2("getSubscribers")
    page = v2("getSubscribers", limit=1)["result"]
    v2("getSubscribers", limit=1, cursor=page["next_cursor"])
    broadcast = v2("createBroadcast", method="sendMessage", payload={"text": "news"})["result"]
    calls.job(DELIVER_BROADCASTS)
    v2("getBroadcast", broadcast_id=broadcast["broadcast_id"])
    first = v2("getBroadcastRecipients", broadcast_id=broadcast["broadcast_id"],
               limit=1)["result"]
    v2("getBroadcastRecipients", broadcast_id=broadcast["broadcast_id"], limit=1,
       cursor=first["next_cursor"])
    queued = v2("createBroadcast", method="sendMessage", payload={"text": "more"})["result"]
    v2("cancelBroadcast", broadcast_id=queued["broadcast_id"])


def webhooks_and_replays(calls: Caller, updates: list[dict]) -> None:
    """A webhook's delivery; the testing tools' replay: an acknowledged update
    found in its chat's journal, and the delivery records with their marks."""
    v2, bot_id = calls.v2, calls.bot.id
    calls.operate("userSendMessage", user_id=calls.users[1], bot_id=bot_id, text="for the hook")
    v2("setWebhook", url="https://127.0.0.1:9/hook")
    v2("getWebhookInfo")
    calls.job(DELIVER_WEBHOOKS)
    calls.operate("redeliverUpdate", bot_id=bot_id, update_id=updates[0]["update_id"])
    calls.operate("getWebhookDeliveries", bot_id=bot_id)
    v2("deleteWebhook", drop_pending_updates=True)
    calls.operate("userGetChat", user_id=calls.users[0], bot_id=bot_id)
    calls.operate("exportChat", user_id=calls.users[0], bot_id=bot_id)


def sandbox_pages(calls: Caller, updates: list[dict]) -> None:
    person, user, bot_id = calls.client, calls.users[0], calls.bot.id
    form = person.get("/sandbox/signin").text
    token = re.search(r'name="csrf_token" value="([^"]+)"', form).group(1)
    assert person.post("/sandbox/signin", data={"csrf_token": token,
                                                "token": ADMIN_TOKEN}).status_code == 303
    for label, path in (("sandbox chat state", f"/sandbox/chats/{user}/{bot_id}/state"),
                        ("sandbox chat page", f"/sandbox/chats/{user}/{bot_id}"),
                        ("sandbox chat list", f"/sandbox/chats?user={user}"),
                        ("sandbox update path", f"/sandbox/chats/{user}/{bot_id}/path"
                                                f"?update_id={updates[0]['update_id']}"),
                        ("sandbox replays", f"/sandbox/bots/{bot_id}/replays")):
        assert calls.labelled(label, lambda path=path: person.get(path)).status_code == 200
