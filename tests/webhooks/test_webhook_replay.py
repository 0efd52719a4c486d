"""redeliverUpdate to a bot with a webhook: the replay reaches the bot's
real (local) receiver as a new update with the same content, and its
delivery record says which update it repeats (getWebhookDeliveries'
``replay_of``); the body the bot receives carries no mark."""
from __future__ import annotations

import json

import pytest

from botsvc.devkit.receivers import statuses
from tests.webhooks.support import received_ids


@pytest.fixture
def app(make_app, ca_file):
    return make_app(webhook_allow_private=True, webhook_ca_bundle=ca_file, test_tools=True)


def test_a_redelivered_update_reaches_the_receiver_marked_in_its_record(
        bot, chat, operator, hook, run_pass, clock):
    receiver = hook(bot)
    run_pass()
    assert received_ids(receiver) == [chat.update_id]
    replay = operator("redeliverUpdate", bot_id=bot.id, update_id=chat.update_id)
    run_pass()
    assert received_ids(receiver) == [chat.update_id, replay["update_id"]]
    first, again = (json.loads(r["body"]) for r in receiver.requests)
    assert again == {**first, "update_id": replay["update_id"]}
    newest, oldest = operator("getWebhookDeliveries", bot_id=bot.id)["deliveries"]
    assert newest["update_id"] == replay["update_id"]
    assert newest["replay_of"] == chat.update_id and newest["http_status"] == 200
    assert oldest["update_id"] == chat.update_id and "replay_of" not in oldest


@pytest.mark.call_log
def test_the_sandbox_path_of_a_webhook_update(bot, chat, operator, hook, run_pass, clock,
                                              client):
    from tests.sandbox.sandbox_client import Person
    person = Person(client)
    assert person.sign_in().status_code == 303
    hook(bot, statuses(500, 200))
    run_pass()
    clock.advance(1)
    run_pass()                                   # the retry succeeds
    reply = bot.ok("sendMessage", chat_id=chat.chat_id, text="hi")
    answer = client.get(f"/sandbox/chats/{chat.user_id}/{bot.id}/path",
                        query_string={"update_id": chat.update_id}).get_json()["result"]
    delivery = answer["delivery"]
    assert delivery["by"] == "webhook" and delivery["date"] == int(clock.now)
    assert [(a["attempt"], a["http_status"]) for a in delivery["attempts"]] == [(1, 500), (2, 200)]
    assert delivery["after_seconds"] >= 1
    assert [c["result"]["message_id"] for c in answer["reactions"]] == [reply["message_id"]]
    # One attempt with what the delivery records keep of its request and response.
    one = client.get(f"/sandbox/bots/{bot.id}/attempts/{chat.update_id}/1").get_json()["result"]
    assert one["attempt"]["http_status"] == 500 and one["attempt"]["attempt"] == 1
    assert one["detail_kept"] is ("request" in one["attempt"])
    gone = client.get(f"/sandbox/bots/{bot.id}/attempts/{chat.update_id}/3").get_json()["result"]
    assert gone["attempt"] is None
