"""createBroadcast, getBroadcast, getBroadcastRecipients and cancelBroadcast:
the contract's rules over HTTP (delivery itself is in test_broadcast_delivery)."""
import re
import time

import pytest

from botsvc.api.registry import METHODS
from botsvc.db import connect
from botsvc.devkit.members import add_members
from botsvc.jobs import run_job

BROADCAST_ID = re.compile(r"^bc_[0-9a-f]{32}$")
DELIVER = "deliver_due_broadcasts"


def create(bot, **params) -> dict:
    params.setdefault("method", "sendMessage")
    params.setdefault("payload", {"text": "news"})
    return bot.ok("createBroadcast", **params)


def create_error(bot, status, code, **params) -> dict:
    params.setdefault("method", "sendMessage")
    params.setdefault("payload", {"text": "news"})
    return bot.error("createBroadcast", status, code, **params)


def recipients(bot, broadcast_id: str, **params) -> list[dict]:
    seen, cursor = [], None
    while True:
        extra = {"cursor": cursor} if cursor else {}
        result = bot.ok("getBroadcastRecipients", broadcast_id=broadcast_id, **params, **extra)
        seen.extend(result["recipients"])
        cursor = result["next_cursor"]
        if cursor is None:
            return seen


# -- createBroadcast: the response -------------------------------------------------

def test_create_answers_at_once_with_a_queued_broadcast(bot, start_chat):
    for _ in range(3):
        start_chat(bot)
    before = int(time.time())
    result = create(bot)
    assert set(result) == {"broadcast_id", "status", "counts", "created_at", "completed_at"}
    assert BROADCAST_ID.match(result["broadcast_id"])
    assert result["status"] == "queued"
    assert result["counts"] == {"queued": 3, "sent": 0, "failed": 0, "cancelled": 0}
    assert before <= result["created_at"] <= int(time.time())
    assert result["completed_at"] is None
    assert bot.ok("getBroadcast", broadcast_id=result["broadcast_id"]) == result


def test_omitted_chat_ids_is_a_snapshot_of_the_active_members(bot, new_bot, start_chat,
                                                              operator):
    active = [start_chat(bot) for _ in range(2)]
    stopped = start_chat(bot)
    operator("userStop", user_id=stopped.user_id, bot_id=bot.id)
    start_chat(new_bot())
    broadcast = create(bot)
    start_chat(bot)  # starts after creation: not a recipient
    listed = recipients(bot, broadcast["broadcast_id"])
    assert [r["chat_id"] for r in listed] == sorted(c.chat_id for c in active)
    assert broadcast["counts"]["queued"] == 2


def test_no_active_member_gives_a_broadcast_completed_at_once(bot):
    result = create(bot)
    assert result["status"] == "completed"
    assert result["counts"] == {"queued": 0, "sent": 0, "failed": 0, "cancelled": 0}
    assert result["completed_at"] == result["created_at"]
    assert bot.ok("getBroadcastRecipients", broadcast_id=result["broadcast_id"]) == {
        "recipients": [], "next_cursor": None}


def test_chat_ids_are_the_recipients_in_the_order_given(bot, start_chat):
    chats = [start_chat(bot).chat_id for _ in range(4)]
    chosen = [chats[2], chats[0], chats[3]]
    broadcast = create(bot, chat_ids=chosen)
    assert broadcast["counts"]["queued"] == 3
    assert [r["chat_id"] for r in recipients(bot, broadcast["broadcast_id"])] == chosen


def test_a_repeated_chat_id_is_one_recipient(bot, start_chat):
    a, b = start_chat(bot).chat_id, start_chat(bot).chat_id
    broadcast = create(bot, chat_ids=[a, b, a, a])
    assert broadcast["counts"]["queued"] == 2
    assert [r["chat_id"] for r in recipients(bot, broadcast["broadcast_id"])] == [a, b]


def test_a_stopped_member_in_chat_ids_is_accepted_and_fails_at_delivery(app, bot, start_chat,
                                                                        operator):
    stopped = start_chat(bot)
    operator("userStop", user_id=stopped.user_id, bot_id=bot.id)
    broadcast = create(bot, chat_ids=[stopped.chat_id])
    run_job(app, DELIVER)
    assert recipients(bot, broadcast["broadcast_id"]) == [
        {"chat_id": stopped.chat_id, "status": "failed", "last_error": "BOT_NOT_STARTED"}]


# -- createBroadcast: method -------------------------------------------------------

@pytest.mark.parametrize("method", ["sendMediaGroup", "sendmessage", "getMe", "answerCallbackQuery",
                                    "editMessageText", "", 5, None, ["sendMessage"]])
def test_method_must_be_one_of_the_eight_send_methods(bot, start_chat, method):
    start_chat(bot)
    body = create_error(bot, 400, "INVALID_PARAMETER", method=method)
    assert body["parameters"]["field"] == "method"


def test_method_is_required(bot):
    body = bot.error("createBroadcast", 400, "INVALID_PARAMETER", payload={"text": "x"})
    assert body["parameters"]["field"] == "method"


def test_a_send_method_this_server_does_not_have_is_invalid(bot, monkeypatch):
    monkeypatch.delitem(METHODS, "sendMessage")
    body = create_error(bot, 400, "INVALID_PARAMETER")
    assert body["parameters"]["field"] == "method"


# -- createBroadcast: payload ------------------------------------------------------

@pytest.mark.parametrize("payload, path", [
    ({}, "payload.text"),
    ({"text": ""}, "payload.text"),
    ({"text": "é" * 8193}, "payload.text"),          # 16386 bytes
    ({"text": 5}, "payload.text"),
    ({"text": "x", "parse_mode": "HTML"}, "payload.parse_mode"),
    ({"text": "x", "colour": "red"}, "payload.colour"),
    ({"text": "x", "chat_id": "vc_" + "0" * 40}, "payload.chat_id"),
    ({"text": "x", "reply_to_message_id": 1}, "payload.reply_to_message_id"),
])
def test_payload_is_checked_by_the_methods_own_rules(bot, payload, path):
    body = create_error(bot, 400, "INVALID_PARAMETER", payload=payload)
    assert body["parameters"]["field"] == "payload"
    assert body["parameters"]["path"] == path


def test_payload_limits_count_utf8_bytes_like_the_method(bot, start_chat):
    start_chat(bot)
    create(bot, payload={"text": "é" * 8192, "parse_mode": "plain"})  # 16384 bytes


@pytest.mark.parametrize("payload", [None, "text", ["text"], 3])
def test_payload_must_be_an_object(bot, payload):
    body = create_error(bot, 400, "INVALID_PARAMETER", payload=payload)
    assert body["parameters"]["field"] == "payload"


def test_payload_is_required(bot):
    body = bot.error("createBroadcast", 400, "INVALID_PARAMETER", method="sendMessage")
    assert body["parameters"]["field"] == "payload"


# -- createBroadcast: chat_ids -----------------------------------------------------

@pytest.mark.parametrize("chat_ids", [[], "vc_x", None, {"a": 1}])
def test_chat_ids_must_be_an_array_of_1_to_10000(bot, chat_ids):
    body = create_error(bot, 400, "INVALID_PARAMETER", chat_ids=chat_ids)
    assert body["parameters"]["field"] == "chat_ids"


def test_more_than_10000_chat_ids_is_invalid(bot):
    body = create_error(bot, 400, "INVALID_PARAMETER",
                        chat_ids=[f"vc_{i:040x}" for i in range(10001)])
    assert body["parameters"]["field"] == "chat_ids"


@pytest.mark.parametrize("item", [5, "", None, ["vc_x"]])
def test_each_chat_id_must_be_a_non_empty_string(bot, start_chat, item):
    body = create_error(bot, 400, "INVALID_PARAMETER", chat_ids=[start_chat(bot).chat_id, item])
    assert body["parameters"]["field"] == "chat_ids"
    assert body["parameters"]["path"] == "chat_ids.1"


def test_an_unknown_chat_id_is_chat_not_found_and_creates_nothing(bot, start_chat):
    known = start_chat(bot).chat_id
    unknown = "vc_" + "1" * 40
    body = create_error(bot, 404, "CHAT_NOT_FOUND", chat_ids=[known, unknown])
    assert body["parameters"] == {"field": "chat_ids", "chat_id": unknown, "index": 1}
    db = connect(bot.client.application.config["SETTINGS"].db_path)
    assert db.execute("SELECT COUNT(*) FROM broadcasts").fetchone()[0] == 0


def test_another_bots_chat_id_is_refused_like_an_unknown_one(bot, new_bot, start_chat):
    other_chat = start_chat(new_bot())
    body = create_error(bot, 404, "CHAT_NOT_FOUND", chat_ids=[other_chat.chat_id])
    assert body["parameters"]["chat_id"] == other_chat.chat_id


def test_10000_chat_ids_are_accepted_and_queued_in_one_request(app, bot):
    # How fast the one INSERT ... SELECT is belongs to scripts/bench
    # broadcast, not to a timed assertion that a loaded machine turns red.
    chat_ids = add_members(app.config["SETTINGS"].db_path, bot.id, 10000)
    broadcast = create(bot, chat_ids=chat_ids)
    assert broadcast["counts"]["queued"] == 10000
    conn = connect(app.config["SETTINGS"].db_path)
    (rows,) = conn.execute("SELECT COUNT(*) FROM broadcast_recipients").fetchone()
    assert rows == 10000


def test_unknown_parameters_are_rejected(bot):
    body = create_error(bot, 400, "INVALID_PARAMETER", schedule_at=5)
    assert body["parameters"]["field"] == "schedule_at"


# -- rate limit and idempotency ----------------------------------------------------

def test_create_is_limited_to_10_per_minute(make_app):
    app = make_app(rate_broadcasts_per_min=10)
    client = app.test_client()
    admin = {"Authorization": "Bearer test-admin-token"}
    token = client.post("/manage/v1/createBot", json={"username": "ratebot"},
                        headers=admin).get_json()["result"]["token"]
    headers = {"Authorization": f"Bearer {token}"}
    body = {"method": "sendMessage", "payload": {"text": "x"}}
    for _ in range(10):
        assert client.post("/v2/createBroadcast", json=body, headers=headers).status_code == 200
    refused = client.post("/v2/createBroadcast", json=body, headers=headers)
    assert refused.status_code == 429
    assert refused.get_json()["error_code"] == "RATE_LIMITED"
    retry_after = refused.get_json()["parameters"]["retry_after"]
    assert isinstance(retry_after, int) and retry_after >= 1
    assert refused.headers["Retry-After"] == str(retry_after)
    # Reading is not creating: getBroadcast is not in the broadcast bucket.
    assert client.post("/v2/getSubscribers", json={}, headers=headers).status_code == 200


def test_idempotency_key_replays_the_same_broadcast(bot, start_chat):
    start_chat(bot)
    params = {"method": "sendMessage", "payload": {"text": "once"}}
    first = bot.call("createBroadcast", params, headers={"Idempotency-Key": "bc-1"})
    again = bot.call("createBroadcast", params, headers={"Idempotency-Key": "bc-1"})
    assert first.status_code == again.status_code == 200
    assert again.headers["Idempotent-Replayed"] == "true"
    assert again.get_json() == first.get_json()
    db = connect(bot.client.application.config["SETTINGS"].db_path)
    assert db.execute("SELECT COUNT(*) FROM broadcasts").fetchone()[0] == 1
    changed = bot.call("createBroadcast", {**params, "payload": {"text": "twice"}},
                       headers={"Idempotency-Key": "bc-1"})
    assert changed.status_code == 409
    assert changed.get_json()["error_code"] == "IDEMPOTENCY_CONFLICT"


# -- getBroadcast, getBroadcastRecipients, cancelBroadcast: access ----------------

READERS = ["getBroadcast", "getBroadcastRecipients", "cancelBroadcast"]


@pytest.mark.parametrize("method", READERS)
@pytest.mark.parametrize("broadcast_id", ["bc_" + "0" * 32, "bc_nope", "nope", "BC_" + "a" * 32])
def test_unknown_or_malformed_broadcast_id_is_not_found(bot, method, broadcast_id):
    body = bot.error(method, 404, "BROADCAST_NOT_FOUND", broadcast_id=broadcast_id)
    assert body["parameters"]["field"] == "broadcast_id"


@pytest.mark.parametrize("method", READERS)
def test_another_bots_broadcast_is_not_found(bot, new_bot, start_chat, method):
    other = new_bot()
    start_chat(other)
    theirs = create(other)
    bot.error(method, 404, "BROADCAST_NOT_FOUND", broadcast_id=theirs["broadcast_id"])
    assert other.ok("getBroadcast", broadcast_id=theirs["broadcast_id"])["status"] == "queued"


@pytest.mark.parametrize("method", READERS)
@pytest.mark.parametrize("params", [{}, {"broadcast_id": 5}, {"broadcast_id": None},
                                    {"broadcast_id": ""}])
def test_broadcast_id_is_a_required_string(bot, method, params):
    body = bot.error(method, 400, "INVALID_PARAMETER", **params)
    assert body["parameters"]["field"] == "broadcast_id"


# -- getBroadcastRecipients: pages -------------------------------------------------

def test_recipients_come_in_pages_with_their_own_cursor(app, bot, start_chat):
    chats = [start_chat(bot).chat_id for _ in range(5)]
    broadcast = create(bot, chat_ids=chats)
    first = bot.ok("getBroadcastRecipients", broadcast_id=broadcast["broadcast_id"], limit=2)
    assert [r["chat_id"] for r in first["recipients"]] == chats[:2]
    assert first["recipients"][0] == {"chat_id": chats[0], "status": "queued"}
    assert first["next_cursor"] not in chats  # not a chat_id: the recipients' own cursor
    assert [r["chat_id"] for r in recipients(bot, broadcast["broadcast_id"], limit=2)] == chats
    last = bot.ok("getBroadcastRecipients", broadcast_id=broadcast["broadcast_id"], limit=5)
    assert last["next_cursor"] is None


def test_recipients_show_message_id_when_sent_and_last_error_when_failed(app, bot, start_chat,
                                                                         operator):
    sent, blocked = start_chat(bot), start_chat(bot)
    broadcast = create(bot, chat_ids=[sent.chat_id, blocked.chat_id])
    operator("userBlock", user_id=blocked.user_id, bot_id=bot.id)
    run_job(app, DELIVER)
    listed = recipients(bot, broadcast["broadcast_id"])
    message_id = listed[0].get("message_id")
    assert listed == [
        {"chat_id": sent.chat_id, "status": "sent", "message_id": message_id},
        {"chat_id": blocked.chat_id, "status": "failed", "last_error": "BOT_BLOCKED"}]
    view = operator("userGetChat", user_id=sent.user_id, bot_id=bot.id)
    assert view["messages"][-1]["message_id"] == message_id


@pytest.mark.parametrize("limit", [0, 101, "2", True])
def test_recipients_limit_is_1_to_100(bot, start_chat, limit):
    start_chat(bot)
    broadcast = create(bot)
    body = bot.error("getBroadcastRecipients", 400, "INVALID_PARAMETER",
                     broadcast_id=broadcast["broadcast_id"], limit=limit)
    assert body["parameters"]["field"] == "limit"


def test_recipients_cursor_of_another_broadcast_or_made_up_is_invalid(bot, start_chat):
    for _ in range(3):
        start_chat(bot)
    one, two = create(bot), create(bot)
    cursor = bot.ok("getBroadcastRecipients", broadcast_id=one["broadcast_id"],
                    limit=1)["next_cursor"]
    for bad in (cursor + "x", "garbage", "", "vc_" + "0" * 40):
        body = bot.error("getBroadcastRecipients", 400, "INVALID_PARAMETER",
                         broadcast_id=one["broadcast_id"], cursor=bad)
        assert body["parameters"]["field"] == "cursor"
    body = bot.error("getBroadcastRecipients", 400, "INVALID_PARAMETER",
                     broadcast_id=two["broadcast_id"], cursor=cursor)
    assert body["parameters"]["field"] == "cursor"


def test_recipients_default_limit_is_100(app, bot):
    add_members(app.config["SETTINGS"].db_path, bot.id, 101)
    broadcast = create(bot)
    first = bot.ok("getBroadcastRecipients", broadcast_id=broadcast["broadcast_id"])
    assert len(first["recipients"]) == 100 and first["next_cursor"] is not None


def test_a_forged_cursor_beyond_any_position_is_invalid(bot, chat):
    import base64
    broadcast_id = create(bot)["broadcast_id"]
    for position in (2**63, 10**30):
        raw = f"{broadcast_id}:{position}".encode()
        cursor = base64.urlsafe_b64encode(raw).decode().rstrip("=")
        bot.error("getBroadcastRecipients", 400, "INVALID_PARAMETER",
                  broadcast_id=broadcast_id, cursor=cursor)


def test_a_long_broadcast_id_is_simply_not_found(bot):
    bot.error("getBroadcast", 404, "BROADCAST_NOT_FOUND", broadcast_id="b" * 257)
