"""One update's path (GET chats/<user>/<bot>/path): from the user's action to
its delivery (the getUpdates call, or the webhook attempts) and the calls the
bot made in response, and back from a call (or a bot's message) to the
update it answered; replays listed with their own path."""
from __future__ import annotations

import pytest

from tests.support.contract import assert_failure, assert_invalid

pytestmark = pytest.mark.call_log


@pytest.fixture
def app(make_app):
    return make_app(test_tools=True)


def path(person, chat, bot, **query):
    return person.client.get(f"/sandbox/chats/{chat.user_id}/{bot.id}/path", query_string=query)


def ok_path(person, chat, bot, **query) -> dict:
    response = path(person, chat, bot, **query)
    assert response.status_code == 200, response.get_json()
    return response.get_json()["result"]


def test_from_an_action_to_its_poll_and_the_bots_reaction(person, operator, bot, chat, new_bot):
    said = operator("userSendMessage", user_id=chat.user_id, bot_id=bot.id, text="ping")
    other = new_bot()
    bot.ok("getMe")                                            # before the delivery: not a reaction
    updates = bot.ok("getUpdates")
    message_update = updates[-1]
    reply = bot.ok("sendMessage", chat_id=chat.chat_id, text="pong")
    other.ok("getMe")
    elsewhere = operator("userStart", user_id=operator("createUser")["user_id"], bot_id=bot.id)
    bot.ok("sendMessage", chat_id=elsewhere["chat_id"], text="not this chat")
    calls = {c["method"]: c for c in operator("getBotCalls", bot_id=bot.id)["calls"]}

    trail = ok_path(person, chat, bot, update_id=message_update["update_id"])
    assert trail["update_id"] == message_update["update_id"]
    assert message_update["message"]["message_id"] == said["message_id"]
    assert trail["action"]["kind"] == "message" and trail["replay_of"] is None
    delivery = trail["delivery"]
    assert delivery["by"] == "getUpdates" and delivery["call_id"] == calls["getUpdates"]["call_id"]
    assert delivery["after_seconds"] >= 0
    # The reaction: the reply to this chat, not the call to another chat.
    assert [c["result"]["message_id"] for c in trail["reactions"]] == [reply["message_id"]]
    assert trail["reactions_cut"] is False and trail["replays"] == []

    # Back: from the reply (a call, or the bot's message) to the update it answered.
    for query in ({"call_id": trail["reactions"][0]["call_id"]},
                  {"message_id": reply["message_id"]}):
        back = ok_path(person, chat, bot, **query)
        assert back["update_id"] == message_update["update_id"]
        assert back["call_id"] == trail["reactions"][0]["call_id"]
    # The user's message itself leads to its update too.
    mine = ok_path(person, chat, bot, message_id=said["message_id"])
    assert mine["update_id"] == message_update["update_id"] and mine["call_id"] is None


def test_a_replay_has_its_own_path_and_is_listed(person, operator, bot, chat):
    bot.ok("getUpdates")
    bot.ok("sendMessage", chat_id=chat.chat_id, text="welcome")
    replay = operator("redeliverUpdate", bot_id=bot.id, update_id=chat.update_id)
    bot.ok("getUpdates", offset=chat.update_id + 1)
    again = bot.ok("sendMessage", chat_id=chat.chat_id, text="welcome again")
    original = ok_path(person, chat, bot, update_id=chat.update_id)
    assert [r["update_id"] for r in original["replays"]] == [replay["update_id"]]
    assert [c["result"]["text"] for c in original["reactions"]] == ["welcome"]
    replayed = ok_path(person, chat, bot, update_id=replay["update_id"])
    assert replayed["replay_of"] == chat.update_id and replayed["action"] is None
    assert replayed["delivery"]["by"] == "getUpdates"
    assert [c["result"]["message_id"] for c in replayed["reactions"]] == [again["message_id"]]


def test_an_undelivered_update_has_no_delivery_yet(person, operator, bot, chat):
    trail = ok_path(person, chat, bot, update_id=chat.update_id)
    assert trail["delivery"] is None and trail["reactions"] == []


def test_refusals_name_the_parameter(person, operator, bot, chat, new_bot):
    assert_invalid(path(person, chat, bot), "event_id")
    assert_invalid(path(person, chat, bot, update_id="x"), "update_id")
    assert_invalid(path(person, chat, bot, update_id=chat.update_id, call_id=1), "event_id")
    other = new_bot()
    someone_else = operator("userStart", user_id=chat.user_id, bot_id=other.id)
    assert_invalid(path(person, chat, bot, update_id=someone_else["update_id"]), "update_id")
    assert_invalid(path(person, chat, bot, event_id=999999), "event_id")
    assert_invalid(path(person, chat, bot, call_id=999999), "call_id")
    # Unknown bot: refused as the operator API refuses it.
    response = person.client.get(f"/sandbox/chats/{chat.user_id}/999999/path?update_id=1")
    assert_invalid(response, "bot_id")


def test_signed_out_is_json_401(client, bot, chat):
    response = client.get(f"/sandbox/chats/{chat.user_id}/{bot.id}/path?update_id=1")
    assert_failure(response, 401, "UNAUTHORIZED")


def test_the_bots_replay_marks(person, operator, bot, chat):
    assert person.client.get(f"/sandbox/bots/{bot.id}/replays").get_json()["result"] == {
        "replays": []}
    replay = operator("redeliverUpdate", bot_id=bot.id, update_id=chat.update_id)
    [mark] = person.client.get(f"/sandbox/bots/{bot.id}/replays").get_json()["result"]["replays"]
    assert set(mark) == {"update_id", "replay_of", "created_at"}
    assert (mark["update_id"], mark["replay_of"]) == (replay["update_id"], chat.update_id)
    assert_invalid(person.client.get("/sandbox/bots/999999/replays"), "bot_id")
