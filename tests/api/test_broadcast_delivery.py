"""The broadcast worker, run by hand: same send path as the method, rechecks at
delivery, statuses and counts, cancel, the shared send rate, and no recipient
lost or duplicated when a batch dies half-way or two processes deliver at once."""
import dataclasses
import sqlite3
import threading

import pytest
from marshmallow import fields

from botsvc.api import broadcast_delivery
from botsvc.api.registry import METHODS
from botsvc.catalogue.validation import ChatId, StrictSchema, Text
from botsvc.db import connect
from botsvc.devkit.members import add_members
from botsvc.domain import broadcasts as domain
from botsvc.domain import messages
from botsvc.domain.chats import require_active_chat
from botsvc.errors import invalid
from botsvc.jobs import run_job
from tests.support.contract import BotClient, Operator

DELIVER = "deliver_due_broadcasts"


def create(bot, **params) -> dict:
    params.setdefault("method", "sendMessage")
    params.setdefault("payload", {"text": "news"})
    return bot.ok("createBroadcast", **params)


def status_of(bot, broadcast: dict) -> dict:
    return bot.ok("getBroadcast", broadcast_id=broadcast["broadcast_id"])


def all_recipients(bot, broadcast: dict) -> list[dict]:
    seen, cursor = [], None
    while True:
        extra = {"cursor": cursor} if cursor else {}
        page = bot.ok("getBroadcastRecipients", broadcast_id=broadcast["broadcast_id"], **extra)
        seen.extend(page["recipients"])
        cursor = page["next_cursor"]
        if cursor is None:
            return seen


def assert_counts_consistent(bot, broadcast: dict) -> dict:
    """queued+sent+failed+cancelled = total, and the counts match the rows."""
    current = status_of(bot, broadcast)
    listed = all_recipients(bot, broadcast)
    counts = current["counts"]
    assert sum(counts.values()) == len(listed)
    for status in ("queued", "sent", "failed", "cancelled"):
        assert counts[status] == sum(1 for r in listed if r["status"] == status), current
    return current


def bot_messages_per_chat(db_path: str, bot_id: int) -> dict[str, int]:
    db = connect(db_path)
    try:
        rows = db.execute(
            "SELECT c.chat_id, COUNT(m.message_id) FROM chats c LEFT JOIN messages m"
            " ON m.chat_ref = c.id AND m.from_bot = 1 WHERE c.bot_id = ? GROUP BY c.id",
            (bot_id,)).fetchall()
        return {chat_id: count for chat_id, count in rows}
    finally:
        db.close()


@pytest.fixture
def db_path(app):
    return app.config["SETTINGS"].db_path


# -- delivery through the method's own path ---------------------------------------

def test_every_recipient_gets_the_payload_once_and_the_broadcast_completes(
        app, bot, start_chat, operator):
    chats = [start_chat(bot) for _ in range(3)]
    broadcast = create(bot, payload={"text": "hello all", "parse_mode": "plain"})
    run_job(app, DELIVER)
    done = assert_counts_consistent(bot, broadcast)
    assert done["status"] == "completed"
    assert done["counts"] == {"queued": 0, "sent": 3, "failed": 0, "cancelled": 0}
    assert isinstance(done["completed_at"], int) and done["completed_at"] >= done["created_at"]
    by_chat = {r["chat_id"]: r["message_id"] for r in all_recipients(bot, broadcast)}
    for chat in chats:
        view = operator("userGetChat", user_id=chat.user_id, bot_id=bot.id)
        sent = [m for m in view["messages"] if m["from_bot"]]
        assert [(m["text"], m["type"], m["message_id"]) for m in sent] == [
            ("hello all", "text", by_chat[chat.chat_id])]
    run_job(app, DELIVER)  # nothing left: nothing sent twice
    assert all(len([m for m in operator("userGetChat", user_id=c.user_id, bot_id=bot.id)
                    ["messages"] if m["from_bot"]]) == 1 for c in chats)


def test_a_member_who_stops_or_blocks_before_delivery_fails_with_that_code(
        app, bot, start_chat, operator):
    stays, stops, blocks, returns = (start_chat(bot) for _ in range(4))
    broadcast = create(bot)
    operator("userStop", user_id=stops.user_id, bot_id=bot.id)
    operator("userBlock", user_id=blocks.user_id, bot_id=bot.id)
    operator("userStop", user_id=returns.user_id, bot_id=bot.id)
    operator("userStart", user_id=returns.user_id, bot_id=bot.id)
    run_job(app, DELIVER)
    result = {r["chat_id"]: r for r in all_recipients(bot, broadcast)}
    assert result[stays.chat_id]["status"] == "sent"
    assert result[returns.chat_id]["status"] == "sent"
    assert result[stops.chat_id] == {"chat_id": stops.chat_id, "status": "failed",
                                     "last_error": "BOT_NOT_STARTED"}
    assert result[blocks.chat_id] == {"chat_id": blocks.chat_id, "status": "failed",
                                      "last_error": "BOT_BLOCKED"}
    done = assert_counts_consistent(bot, broadcast)
    assert done["status"] == "completed" and done["counts"]["failed"] == 2


def test_status_goes_queued_running_completed_with_consistent_counts(
        app, bot, db_path, monkeypatch):
    add_members(db_path, bot.id, 7)
    monkeypatch.setattr(broadcast_delivery, "BATCH_SIZE", 3)
    broadcast = create(bot)
    assert assert_counts_consistent(bot, broadcast)["status"] == "queued"
    conn = connect(db_path)
    row = domain.unfinished_broadcasts(conn)[0]
    seen = []
    while domain.is_unfinished(conn, row["id"]):
        broadcast_delivery.deliver_batch(conn, app.config["SETTINGS"], row, None)
        current = assert_counts_consistent(bot, broadcast)
        seen.append((current["status"], current["counts"]["sent"], current["completed_at"]))
    assert [s[:2] for s in seen] == [("running", 3), ("running", 6), ("completed", 7)]
    assert seen[0][2] is None and seen[1][2] is None and seen[2][2] is not None


def test_sent_messages_stay_editable_and_deletable_through_the_normal_methods(
        app, bot, start_chat, operator):
    chat = start_chat(bot)
    broadcast = create(bot)
    run_job(app, DELIVER)
    message_id = all_recipients(bot, broadcast)[0]["message_id"]
    bot.ok("editMessageText", chat_id=chat.chat_id, message_id=message_id, text="fixed")
    view = operator("userGetChat", user_id=chat.user_id, bot_id=bot.id)
    assert view["messages"][-1]["text"] == "fixed"
    assert bot.ok("deleteMessage", chat_id=chat.chat_id, message_id=message_id) is True
    view = operator("userGetChat", user_id=chat.user_id, bot_id=bot.id)
    assert all(m["message_id"] != message_id for m in view["messages"])


# -- any of the eight methods: schema, prepare step and handler are the method's ----

class FakeCardSchema(StrictSchema):
    chat_id = ChatId(required=True)
    card = fields.Dict(required=True)
    caption = Text(max_bytes=10)


def install_fake_send_card(monkeypatch, calls: list) -> None:
    """A stand-in for sendCard (it arrives from another branch), with a prepare
    step and a handler-only check, to prove the worker uses all three."""
    def prepare(call):
        calls.append(("prepare", dict(call.params)))
        return {"prepared": call.params["card"]["title"]}

    def handler(call):
        if call.params["card"]["title"] == "bad":
            raise invalid("card", "card.title is refused by the handler", path="card.title")
        chat = require_active_chat(call.conn, call.bot.id, call.params["chat_id"])
        calls.append(("handler", call.params["chat_id"], call.prepared))
        return messages.send_message(call.conn, call.bot.id, chat, type="card",
                                     content={"card": call.params["card"]})

    monkeypatch.setitem(METHODS, "sendCard", dataclasses.replace(
        METHODS["sendCard"], handler=handler, schema=FakeCardSchema(), prepare=prepare,
        check_references=None, send_to_many=None))


def test_other_send_methods_go_through_their_own_prepare_and_handler(
        app, bot, start_chat, monkeypatch):
    calls = []
    install_fake_send_card(monkeypatch, calls)
    chats = [start_chat(bot).chat_id for _ in range(2)]
    body = bot.error("createBroadcast", 400, "INVALID_PARAMETER", method="sendCard",
                     payload={"card": {"title": "t"}, "caption": "x" * 11})
    assert body["parameters"] == {"field": "payload", "path": "payload.caption"}
    broadcast = create(bot, method="sendCard", payload={"card": {"title": "t"}})
    calls.clear()
    run_job(app, DELIVER)
    assert calls[0] == ("prepare", {"card": {"title": "t"}})
    assert [c for c in calls if c[0] == "handler"] == [
        ("handler", chat_id, {"prepared": "t"}) for chat_id in sorted(chats)]
    assert status_of(bot, broadcast)["counts"]["sent"] == 2


def test_what_only_the_handler_refuses_is_refused_at_creation(bot, start_chat, monkeypatch):
    install_fake_send_card(monkeypatch, [])
    chat = start_chat(bot)
    body = bot.error("createBroadcast", 400, "INVALID_PARAMETER", method="sendCard",
                     payload={"card": {"title": "bad"}})
    assert body["parameters"] == {"field": "payload", "path": "payload.card.title"}
    # The trial send was undone: no message, no broadcast.
    assert bot_messages_per_chat(bot.client.application.config["SETTINGS"].db_path,
                                 bot.id) == {chat.chat_id: 0}


def test_a_method_gone_at_delivery_fails_its_recipients_instead_of_blocking(
        app, bot, start_chat, monkeypatch):
    start_chat(bot)
    broadcast = create(bot)
    monkeypatch.delitem(METHODS, "sendMessage")
    run_job(app, DELIVER)
    done = status_of(bot, broadcast)
    assert done["status"] == "completed" and done["counts"]["failed"] == 1
    assert all_recipients(bot, broadcast)[0]["last_error"] == "INVALID_PARAMETER"


def test_an_unexpected_error_fails_that_recipient_only(app, bot, start_chat, monkeypatch):
    chats = [start_chat(bot).chat_id for _ in range(3)]
    broadcast = create(bot, chat_ids=chats)
    original = METHODS["sendMessage"]

    def flaky(call):
        if call.params["chat_id"] == chats[1]:
            raise RuntimeError("a bug")
        return original.handler(call)

    def broken(call, chats):
        raise RuntimeError("a bug in the batch path")

    # The batch path fails whole, so each recipient goes through the handler.
    monkeypatch.setitem(METHODS, "sendMessage", dataclasses.replace(
        original, handler=flaky, send_to_many=broken))
    run_job(app, DELIVER)
    assert [r["status"] for r in all_recipients(bot, broadcast)] == ["sent", "failed", "sent"]
    assert all_recipients(bot, broadcast)[1]["last_error"] == "INTERNAL_ERROR"


@pytest.mark.parametrize("method, payload", [
    ("sendMessage", {"text": "hello *all*", "parse_mode": "plain",
                     "reply_markup": {"inline_keyboard": [[], [{"text": "Go",
                                                                "callback_data": "go"}]]}}),
    ("sendCard", {"card": {"type": "info", "title": "News", "text": "Today",
                           "fields": [{"label": "When", "value": "Now"}]},
                  "reply_markup": {"inline_keyboard": [[{"text": "Open",
                                                         "url": "https://example.com"}]]}}),
])
def test_a_batch_sends_what_the_method_sends_to_one_chat(app, bot, start_chat, operator, method,
                                                         payload):
    """sendMessage and sendCard deliver a batch in one go (Method.send_to_many);
    each member's message is the one the method itself makes for a chat."""
    alone, *members = [start_chat(bot) for _ in range(4)]
    direct = bot.ok(method, chat_id=alone.chat_id, **payload)
    broadcast = create(bot, method=method, payload=payload,
                       chat_ids=[member.chat_id for member in members])
    run_job(app, DELIVER)
    sent = {r["chat_id"]: r["message_id"] for r in all_recipients(bot, broadcast)}
    assert sorted(sent.values()) == list(range(direct["message_id"] + 1,
                                               direct["message_id"] + 4))

    def without_ids(message: dict) -> dict:
        return {k: v for k, v in message.items() if k not in ("message_id", "chat", "date")}

    for member in members:
        [message] = [m for m in operator("userGetChat", user_id=member.user_id,
                                         bot_id=bot.id)["messages"] if m["from_bot"]]
        assert message["message_id"] == sent[member.chat_id]
        assert without_ids(message) == without_ids(direct)


# -- cancel ------------------------------------------------------------------------

def test_cancel_before_delivery_cancels_everyone(app, bot, start_chat):
    for _ in range(3):
        start_chat(bot)
    broadcast = create(bot)
    assert bot.ok("cancelBroadcast", broadcast_id=broadcast["broadcast_id"]) is True
    run_job(app, DELIVER)
    done = assert_counts_consistent(bot, broadcast)
    assert done["status"] == "cancelled" and isinstance(done["completed_at"], int)
    assert done["counts"] == {"queued": 0, "sent": 0, "failed": 0, "cancelled": 3}
    assert all(set(r) == {"chat_id", "status"} and r["status"] == "cancelled"
               for r in all_recipients(bot, broadcast))
    assert bot_messages_per_chat(app.config["SETTINGS"].db_path, bot.id) == {
        r["chat_id"]: 0 for r in all_recipients(bot, broadcast)}


def test_cancel_mid_delivery_keeps_the_sent_messages(app, bot, db_path, monkeypatch):
    add_members(db_path, bot.id, 5)
    monkeypatch.setattr(broadcast_delivery, "BATCH_SIZE", 2)
    broadcast = create(bot)
    conn = connect(db_path)
    broadcast_delivery.deliver_batch(conn, app.config["SETTINGS"],
                                     domain.unfinished_broadcasts(conn)[0], None)
    assert bot.ok("cancelBroadcast", broadcast_id=broadcast["broadcast_id"]) is True
    run_job(app, DELIVER)
    done = assert_counts_consistent(bot, broadcast)
    assert done["status"] == "cancelled"
    assert done["counts"] == {"queued": 0, "sent": 2, "failed": 0, "cancelled": 3}
    listed = all_recipients(bot, broadcast)
    sent_to = {r["chat_id"] for r in listed if r["status"] == "sent"}
    assert all("message_id" in r for r in listed if r["status"] == "sent")
    per_chat = bot_messages_per_chat(db_path, bot.id)
    assert per_chat == {chat_id: int(chat_id in sent_to) for chat_id in per_chat}


def test_cancel_of_a_finished_broadcast_is_true_and_changes_nothing(app, bot, start_chat):
    start_chat(bot)
    broadcast = create(bot)
    run_job(app, DELIVER)
    completed = status_of(bot, broadcast)
    assert bot.ok("cancelBroadcast", broadcast_id=broadcast["broadcast_id"]) is True
    assert status_of(bot, broadcast) == completed
    other = create(bot)
    bot.ok("cancelBroadcast", broadcast_id=other["broadcast_id"])
    cancelled = status_of(bot, other)
    assert bot.ok("cancelBroadcast", broadcast_id=other["broadcast_id"]) is True
    assert status_of(bot, other) == cancelled


# -- the shared send rate ----------------------------------------------------------

def bot_on(app, username: str) -> BotClient:
    client = app.test_client()
    created = Operator(client)("createBot", username=username)
    return BotClient(client, created["bot"], created["token"])


def test_delivery_leaves_a_reserve_of_the_send_rate_for_the_bots_replies(make_app):
    app = make_app(rate_sends_per_sec=20)
    bot = bot_on(app, "ratesendbot")
    chat_ids = add_members(app.config["SETTINGS"].db_path, bot.id, 60)
    broadcast = create(bot)
    run_job(app, DELIVER)
    sent = status_of(bot, broadcast)["counts"]["sent"]
    # The burst of 20 minus the reserve of 5, plus what refills at 20/s during
    # one pass of the job (0.4 s at most): never the whole bucket.
    assert 1 <= sent <= 15 + 8, sent
    for _ in range(4):  # the bot's own replies still go out at once
        bot.ok("sendMessage", chat_id=chat_ids[0], text="reply")


def test_interactive_sends_and_deliveries_share_one_bucket(make_app):
    app = make_app(rate_sends_per_sec=20)
    bot = bot_on(app, "sharebot")
    chat_ids = add_members(app.config["SETTINGS"].db_path, bot.id, 5)
    for _ in range(200):  # the bot spends its whole burst itself, up to a refusal
        if bot.call("sendMessage", {"chat_id": chat_ids[0], "text": "x"}).status_code == 429:
            break
    else:
        pytest.fail("sendMessage was never rate limited")
    broadcast = create(bot)
    run_job(app, DELIVER)
    assert status_of(bot, broadcast)["counts"]["sent"] <= 2  # nothing above the reserve left


def test_with_the_send_limit_off_delivery_runs_at_full_speed(app, bot, db_path):
    add_members(db_path, bot.id, 200)
    broadcast = create(bot)
    run_job(app, DELIVER)  # one pass (0.4 s at most) is plenty for 200 without a limit
    assert status_of(bot, broadcast)["counts"]["sent"] == 200


def test_delivery_pauses_while_the_bot_or_platform_is_disabled(app, bot, start_chat, operator):
    start_chat(bot)
    broadcast = create(bot)
    operator("setBotDisabled", bot_id=bot.id, disabled=True)
    run_job(app, DELIVER)
    operator("setBotDisabled", bot_id=bot.id, disabled=False)
    assert status_of(bot, broadcast)["status"] == "queued"
    operator("setPlatformDisabled", disabled=True)
    run_job(app, DELIVER)
    operator("setPlatformDisabled", disabled=False)
    assert status_of(bot, broadcast)["status"] == "queued"
    run_job(app, DELIVER)
    assert status_of(bot, broadcast)["status"] == "completed"


# -- nothing lost, nothing duplicated --------------------------------------------

def test_a_batch_that_dies_before_commit_is_delivered_later_exactly_once(
        app, bot, db_path, monkeypatch):
    add_members(db_path, bot.id, 30)
    broadcast = create(bot)
    real_record = domain.record_outcomes

    def crash(*args, **kwargs):
        raise sqlite3.OperationalError("disk I/O error (simulated)")

    monkeypatch.setattr(domain, "record_outcomes", crash)
    with pytest.raises(sqlite3.OperationalError):
        run_job(app, DELIVER)
    assert set(bot_messages_per_chat(db_path, bot.id).values()) == {0}  # rolled back
    assert status_of(bot, broadcast)["status"] == "queued"
    monkeypatch.setattr(domain, "record_outcomes", real_record)
    run_job(app, DELIVER)
    assert set(bot_messages_per_chat(db_path, bot.id).values()) == {1}
    assert assert_counts_consistent(bot, broadcast)["counts"]["sent"] == 30


def test_two_workers_delivering_at_once_send_each_recipient_once(app, bot, db_path):
    add_members(db_path, bot.id, 600)
    broadcast = create(bot)
    errors = []

    def worker():
        try:
            run_job(app, DELIVER)
        except Exception as exc:  # pragma: no cover - reported below
            errors.append(exc)

    threads = [threading.Thread(target=worker) for _ in range(3)]
    for thread in threads:
        thread.start()
    for thread in threads:
        thread.join()
    assert not errors
    while status_of(bot, broadcast)["status"] != "completed":  # a slow machine: finish
        run_job(app, DELIVER)
    assert set(bot_messages_per_chat(db_path, bot.id).values()) == {1}
    done = assert_counts_consistent(bot, broadcast)
    assert done["counts"] == {"queued": 0, "sent": 600, "failed": 0, "cancelled": 0}
