"""Idempotency-Key on every method."""
from __future__ import annotations

import json
import threading

import pytest

from tests.support.contract import BotClient, Operator, assert_failure, assert_invalid

REPLAYED = "Idempotent-Replayed"


def _send(bot, key, **params):
    return bot.call("sendMessage", params, headers={"Idempotency-Key": key})


def _texts(operator, chat, bot):
    return [m["text"] for m in operator("userGetChat", user_id=chat.user_id,
                                        bot_id=bot.id)["messages"] if m["from_bot"]]


def test_same_key_and_body_replays_the_result(bot, chat, operator):
    first = _send(bot, "order-1", chat_id=chat.chat_id, text="once")
    assert first.status_code == 200 and REPLAYED not in first.headers
    second = _send(bot, "order-1", chat_id=chat.chat_id, text="once")
    assert second.status_code == 200 and second.headers[REPLAYED] == "true"
    assert second.get_json() == first.get_json()
    assert second.get_data() == first.get_data()
    assert _texts(operator, chat, bot) == ["once"]


def test_reordered_json_keys_and_spacing_replay(bot, chat, operator):
    first = bot.raw("sendMessage", json.dumps({"chat_id": chat.chat_id, "text": "k"}).encode(),
                    headers={"Idempotency-Key": "reorder"})
    body = ('{ "text" : "k",\n  "chat_id": "' + chat.chat_id + '" }').encode()
    second = bot.raw("sendMessage", body, headers={"Idempotency-Key": "reorder"})
    assert second.headers.get(REPLAYED) == "true"
    assert second.get_json() == first.get_json()
    assert _texts(operator, chat, bot) == ["k"]


def test_without_a_key_nothing_is_deduplicated(bot, chat, operator):
    bot.ok("sendMessage", chat_id=chat.chat_id, text="same")
    bot.ok("sendMessage", chat_id=chat.chat_id, text="same")
    assert _texts(operator, chat, bot) == ["same", "same"]


def test_different_body_is_a_conflict(bot, chat, operator):
    _send(bot, "k1", chat_id=chat.chat_id, text="one")
    conflict = _send(bot, "k1", chat_id=chat.chat_id, text="two")
    assert_failure(conflict, 409, "IDEMPOTENCY_CONFLICT")
    assert conflict.get_json()["parameters"].get("in_progress") is None
    assert _texts(operator, chat, bot) == ["one"]
    # the conflict is not stored: the original still replays
    assert _send(bot, "k1", chat_id=chat.chat_id, text="one").headers[REPLAYED] == "true"


def test_extra_or_missing_parameter_is_a_conflict(bot, chat):
    _send(bot, "k2", chat_id=chat.chat_id, text="one")
    assert_failure(_send(bot, "k2", chat_id=chat.chat_id, text="one", parse_mode="plain"),
                   409, "IDEMPOTENCY_CONFLICT")


def test_different_method_is_a_conflict(bot, chat):
    first = bot.call("getChat", {"chat_id": chat.chat_id}, headers={"Idempotency-Key": "m"})
    assert first.status_code == 200
    other = bot.call("getChatMember", {"chat_id": chat.chat_id},
                     headers={"Idempotency-Key": "m"})
    assert_failure(other, 409, "IDEMPOTENCY_CONFLICT")


@pytest.mark.parametrize("key", ["a" * 129, "has space", "a/b", "", "caf\u00e9", "a,b",
                                 "a;b", "{key}", "a+b", "a=b", "k" * 1000])
def test_bad_key_format(bot, chat, key, operator):
    response = bot.call("sendMessage", {"chat_id": chat.chat_id, "text": "x"},
                        headers={"Idempotency-Key": key.encode("utf-8").decode("latin-1")})
    assert_invalid(response, "Idempotency-Key")
    assert _texts(operator, chat, bot) == []


@pytest.mark.parametrize("key", ["a" * 128, "A", "0", "a.b_c:d-E9", "550e8400-e29b-41d4"])
def test_good_key_format(bot, chat, key):
    first = _send(bot, key, chat_id=chat.chat_id, text="x")
    assert first.status_code == 200
    assert _send(bot, key, chat_id=chat.chat_id, text="x").headers[REPLAYED] == "true"


def test_keys_are_case_sensitive(bot, chat, operator):
    _send(bot, "Key", chat_id=chat.chat_id, text="a")
    assert REPLAYED not in _send(bot, "key", chat_id=chat.chat_id, text="b").headers
    assert _texts(operator, chat, bot) == ["a", "b"]


def test_key_on_every_kind_of_method(bot, operator, start_chat):
    chat = start_chat(bot)
    first = bot.call("getUpdates", {}, headers={"Idempotency-Key": "poll"})
    operator("userSendMessage", user_id=chat.user_id, bot_id=bot.id, text="later")
    replay = bot.call("getUpdates", {}, headers={"Idempotency-Key": "poll"})
    assert replay.headers[REPLAYED] == "true" and replay.get_json() == first.get_json()
    assert len(bot.ok("getUpdates")) == 2
    me = bot.call("getMe", {}, headers={"Idempotency-Key": "me"})
    assert bot.call("getMe", {}, headers={"Idempotency-Key": "me"}).get_json() == me.get_json()


def test_4xx_is_stored_and_replayed_after_the_situation_changed(bot, chat, operator):
    operator("userStop", user_id=chat.user_id, bot_id=bot.id)
    first = _send(bot, "late", chat_id=chat.chat_id, text="x")
    assert_failure(first, 403, "BOT_NOT_STARTED")
    operator("userStart", user_id=chat.user_id, bot_id=bot.id)
    again = _send(bot, "late", chat_id=chat.chat_id, text="x")
    assert_failure(again, 403, "BOT_NOT_STARTED")
    assert again.headers[REPLAYED] == "true" and again.get_json() == first.get_json()
    assert _send(bot, "fresh", chat_id=chat.chat_id, text="x").status_code == 200


def test_chat_not_found_is_stored(bot, chat):
    missing = "vc_" + "1" * 40
    first = _send(bot, "nf", chat_id=missing, text="x")
    assert_failure(first, 404, "CHAT_NOT_FOUND")
    again = _send(bot, "nf", chat_id=missing, text="x")
    assert again.status_code == 404 and again.headers[REPLAYED] == "true"
    assert_failure(_send(bot, "nf", chat_id=chat.chat_id, text="x"), 409,
                   "IDEMPOTENCY_CONFLICT")


def test_validation_failure_is_stored(bot, chat):
    first = _send(bot, "bad", chat_id=chat.chat_id, text="")
    assert_invalid(first, "text")
    again = _send(bot, "bad", chat_id=chat.chat_id, text="")
    assert again.headers[REPLAYED] == "true" and again.get_json() == first.get_json()


def test_unauthorized_is_not_stored(bot, chat, operator):
    stale = bot.token
    bot.token = operator("rotateToken", bot_id=bot.id)["token"]
    old = BotClient(bot.client, bot.bot, stale)
    assert_failure(_send(old, "auth", chat_id=chat.chat_id, text="x"), 401, "UNAUTHORIZED")
    response = _send(bot, "auth", chat_id=chat.chat_id, text="x")
    assert response.status_code == 200 and REPLAYED not in response.headers


def test_rate_limited_is_not_stored(make_app, clock):
    app = make_app(rate_api_per_sec=1)
    bot, chat = _bot_with_chat(app)
    assert _send(bot, "a", chat_id=chat, text="x").status_code == 200
    limited = _send(bot, "b", chat_id=chat, text="y")
    assert_failure(limited, 429, "RATE_LIMITED")
    clock.advance(1.0)
    response = _send(bot, "b", chat_id=chat, text="y")
    assert response.status_code == 200 and REPLAYED not in response.headers


def test_replays_consume_no_rate(make_app, clock):
    app = make_app(rate_api_per_sec=2, rate_sends_per_sec=2)
    bot, chat = _bot_with_chat(app)
    assert _send(bot, "r", chat_id=chat, text="x").status_code == 200
    for _ in range(10):
        assert _send(bot, "r", chat_id=chat, text="x").headers[REPLAYED] == "true"
    assert bot.ok("sendMessage", chat_id=chat, text="second")
    bot.error("getMe", 429, "RATE_LIMITED")
    # a replay still works while the bot is limited
    assert _send(bot, "r", chat_id=chat, text="x").status_code == 200


def _bot_with_chat(app):
    client = app.test_client()
    operator = Operator(client)
    created = operator("createBot", username="limited_bot")
    user = operator("createUser")["user_id"]
    chat_id = operator("userStart", user_id=user, bot_id=created["bot"]["id"])["chat_id"]
    return BotClient(client, created["bot"], created["token"]), chat_id


def test_keys_are_per_bot(new_bot, start_chat, operator):
    first, second = new_bot(), new_bot()
    a, b = start_chat(first), start_chat(second)
    r1 = _send(first, "shared", chat_id=a.chat_id, text="hi")
    r2 = _send(second, "shared", chat_id=b.chat_id, text="hi")
    assert r1.status_code == r2.status_code == 200
    assert REPLAYED not in r1.headers and REPLAYED not in r2.headers
    assert _texts(operator, a, first) == ["hi"] and _texts(operator, b, second) == ["hi"]
    assert first.call("getMe", {}, headers={"Idempotency-Key": "me"}).get_json()["result"][
        "id"] == first.id
    assert second.call("getMe", {}, headers={"Idempotency-Key": "me"}).get_json()["result"][
        "id"] == second.id


def test_keys_expire_after_a_day(bot, chat, operator, db):
    _send(bot, "old", chat_id=chat.chat_id, text="x")
    db.execute("UPDATE idempotency_keys SET created_at = created_at - 86401")
    again = _send(bot, "old", chat_id=chat.chat_id, text="x")
    assert again.status_code == 200 and REPLAYED not in again.headers
    assert _texts(operator, chat, bot) == ["x", "x"]
    # not yet a day old: still replayed, and a changed body still conflicts
    db.execute("UPDATE idempotency_keys SET created_at = created_at - 86000")
    assert _send(bot, "old", chat_id=chat.chat_id, text="x").headers[REPLAYED] == "true"
    assert _send(bot, "old", chat_id=chat.chat_id, text="y").status_code == 409


def test_expired_key_may_carry_a_new_body(bot, chat, db):
    _send(bot, "reuse", chat_id=chat.chat_id, text="x")
    db.execute("UPDATE idempotency_keys SET created_at = created_at - 86401")
    response = _send(bot, "reuse", chat_id=chat.chat_id, text="y")
    assert response.status_code == 200 and response.get_json()["result"]["text"] == "y"


def test_cleanup_deletes_expired_keys(app, bot, chat, db):
    from botsvc.jobs import run_job
    _send(bot, "gone", chat_id=chat.chat_id, text="x")
    _send(bot, "kept", chat_id=chat.chat_id, text="y")
    db.execute("UPDATE idempotency_keys SET created_at = created_at - 86401 WHERE key = 'gone'")
    run_job(app, "delete_expired_records")
    keys = [row[0] for row in db.execute("SELECT key FROM idempotency_keys")]
    assert keys == ["kept"]


def test_concurrent_duplicates_execute_once(app, bot, chat, operator):
    results = []
    barrier = threading.Barrier(12)

    def worker():
        client = app.test_client()
        barrier.wait()
        response = client.post("/v2/sendMessage",
                               json={"chat_id": chat.chat_id, "text": "exactly once"},
                               headers={"Authorization": f"Bearer {bot.token}",
                                        "Idempotency-Key": "race"})
        results.append((response.status_code, response.get_json(),
                        response.headers.get(REPLAYED)))

    threads = [threading.Thread(target=worker) for _ in range(12)]
    for thread in threads:
        thread.start()
    for thread in threads:
        thread.join(30)
    assert len(results) == 12
    assert {status for status, _, _ in results} == {200}
    assert len({json.dumps(body, sort_keys=True) for _, body, _ in results}) == 1
    assert [replayed for _, _, replayed in results].count(None) == 1
    assert _texts(operator, chat, bot) == ["exactly once"]


def test_invalid_json_is_stored_under_its_key_and_replayed(bot):
    headers = {"Idempotency-Key": "bad-json"}
    first = bot.raw("getMe", b"{", headers=headers)
    assert_failure(first, 400, "INVALID_JSON")
    again = bot.raw("getMe", b"{", headers=headers)
    assert again.get_json() == first.get_json()
    assert again.headers["Idempotent-Replayed"] == "true"
    # The key now belongs to that body: a different one conflicts.
    assert_failure(bot.raw("getMe", b"{}", headers=headers), 409, "IDEMPOTENCY_CONFLICT")


def test_malformed_bodies_and_keys_take_their_rate_like_any_request(make_app, clock):
    app = make_app(rate_api_per_sec=3)
    bot, _ = _bot_with_chat(app)
    assert [bot.raw("getMe", b"{").status_code for _ in range(3)] == [400, 400, 400]
    assert_failure(bot.raw("getMe", b"{"), 429, "RATE_LIMITED")
    assert_failure(bot.call("getMe", headers={"Idempotency-Key": "bad key"}), 429,
                   "RATE_LIMITED")
