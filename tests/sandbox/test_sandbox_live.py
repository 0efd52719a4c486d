"""The JSON the chat page polls and reads, through Flask's test client: a
chat's state (the newest page, then only what changed after the position
the page holds), older pages, the inspector's answer, the read marker, the
chat list; their exact shapes, who may ask, and CSRF on the one change."""
from __future__ import annotations

import logging

import pytest

from botsvc.db import thread_connection
from botsvc.domain import chat_changes
from tests.sandbox.sandbox_client import Person
from tests.support.contract import BotClient, assert_failure, assert_invalid
from tests.support.media_files import image_bytes, multipart
from tests.support.query_plans import full_scans, statements_of

pytestmark = pytest.mark.call_log   # the inspector shows the calls
KEYBOARD = {"inline_keyboard": [[{"text": "Go", "callback_data": "go"}]]}
STATE_KEYS = {"version", "now", "changed", "full", "membership", "status", "messages", "deleted",
              "callback_answers", "events"}


@pytest.fixture
def world(person, client):
    """A bot (over /v2) and a user who started it from the sandbox."""
    created = person.ok("createBot", username="shop_bot", display_name="Shop",
                        description="Coffee to go")
    bot = BotClient(client, created["bot"], created["token"])
    user_id = person.ok("createUser", display_name="Ada")["user_id"]
    chat_id = person.ok("userStart", user_id=user_id, bot_id=bot.id,
                        start_parameter="promo")["chat_id"]
    return bot, user_id, chat_id


def get(person, path: str, **query) -> dict:
    response = person.client.get(path, query_string=query)
    assert response.status_code == 200, response.get_json()
    body = response.get_json()
    assert body["ok"] is True
    return body["result"]


def state(person, user_id, bot_id, since=None) -> dict:
    query = {} if since is None else {"since": since}
    return get(person, f"/sandbox/chats/{user_id}/{bot_id}/state", **query)


def test_a_chat_not_started_yet(person, world):
    bot, _, _ = world
    newcomer = person.ok("createUser")["user_id"]
    first = state(person, newcomer, bot.id)
    assert first == {"version": "none", "now": first["now"], "changed": True, "full": True,
                     "membership": "not started", "chat": None, "events": []}
    assert state(person, newcomer, bot.id, "none") == {"version": "none", "now": first["now"],
                                                      "changed": False}


def test_the_first_view_is_the_newest_page_with_its_lines(person, world, operator):
    bot, user_id, chat_id = world
    [start] = bot.ok("getUpdates")
    view = state(person, user_id, bot.id)
    assert set(view) == {"version", "now", "changed", "full", "membership", "chat", "events",
                         "click_answers"}
    assert (view["changed"], view["full"], view["membership"]) == (True, True, "active")
    assert view["chat"] == operator("userGetChat", user_id=user_id, bot_id=bot.id, limit=50)
    [line] = view["events"]
    assert line == {"event_id": line["event_id"], "kind": "start", "date": start["message"]["date"],
                    "after_message_id": 1, "message_id": 1, "update": start}
    assert chat_changes.Position.parse(view["version"]) is not None


def test_each_change_comes_alone_after_the_position_held(person, world):
    bot, user_id, chat_id = world
    held = state(person, user_id, bot.id)["version"]
    assert state(person, user_id, bot.id, held)["changed"] is False
    bot.ok("getChat", chat_id=chat_id)                  # a read by the bot changes nothing
    assert state(person, user_id, bot.id, held)["changed"] is False

    def change(expected: dict) -> dict:
        nonlocal held
        answer = state(person, user_id, bot.id, held)
        assert set(answer) == STATE_KEYS
        assert answer["changed"] is True and answer["full"] is False
        assert answer["version"] != held
        for key in ("messages", "deleted", "callback_answers", "events"):
            assert len(answer[key]) == len(expected.get(key, [])), (key, answer)
        held = answer["version"]
        return answer

    sent = bot.ok("sendMessage", chat_id=chat_id, text="hi", reply_markup=KEYBOARD)
    assert change({"messages": [sent]})["messages"] == [sent]
    edited = bot.ok("editMessageText", chat_id=chat_id, message_id=sent["message_id"],
                    text="hi!", reply_markup=KEYBOARD)
    assert change({"messages": [edited]})["messages"] == [edited]
    query_id = person.ok("userClickButton", user_id=user_id, bot_id=bot.id,
                         message_id=sent["message_id"], callback_data="go")["callback_query_id"]
    [click] = change({"events": [1]})["events"]
    assert click["kind"] == "click" and click["callback_query_id"] == query_id
    assert click["update"]["callback_query"] == {"id": query_id, "chat_id": chat_id,
                                                 "message_id": sent["message_id"], "data": "go"}
    assert click["update"] == bot.ok("getUpdates", offset=2)[-1]
    bot.ok("answerCallbackQuery", callback_query_id=query_id, text="Gone")
    [answer] = change({"callback_answers": [1]})["callback_answers"]
    assert answer == {"callback_query_id": query_id, "message_id": sent["message_id"],
                      "data": "go", "text": "Gone", "show_alert": False, "date": answer["date"]}
    bot.ok("deleteMessage", chat_id=chat_id, message_id=sent["message_id"])
    assert change({"deleted": [1]})["deleted"] == [sent["message_id"]]
    mine = person.ok("userSendMessage", user_id=user_id, bot_id=bot.id, text="bye")
    answer = change({"messages": [mine], "events": [1]})
    assert answer["messages"] == [mine] and answer["events"][0]["kind"] == "message"
    person.ok("userStop", user_id=user_id, bot_id=bot.id)
    answer = change({"messages": [1], "events": [1]})
    assert (answer["membership"], answer["status"]) == ("stopped", "stopped")
    assert answer["messages"][0]["text"] == "/stop" and answer["events"][0]["kind"] == "stop"
    person.ok("userBlock", user_id=user_id, bot_id=bot.id)      # stopped: no update
    answer = change({"events": [1]})
    assert answer["membership"] == "blocked"
    assert answer["events"][0]["kind"] == "block" and "update" not in answer["events"][0]
    person.ok("userStart", user_id=user_id, bot_id=bot.id)
    answer = change({"messages": [1], "events": [1]})
    assert answer["membership"] == "active" and answer["events"][0]["kind"] == "unblock"


def test_a_position_far_behind_or_of_another_chat_gets_the_whole_page(person, world,
                                                                      monkeypatch):
    bot, user_id, chat_id = world
    held = state(person, user_id, bot.id)["version"]
    monkeypatch.setattr(chat_changes, "CHANGES_AT_MOST", 3)
    for i in range(4):
        bot.ok("sendMessage", chat_id=chat_id, text=f"t{i}")
    far = state(person, user_id, bot.id, held)
    assert far["full"] is True and len(far["chat"]["messages"]) == 5
    for other in ("9999.1.1.1.1", "nonsense", "1.2.3", "-1.0.0.0.0", "1.2.3.4." + "9" * 30):
        assert state(person, user_id, bot.id, other)["full"] is True


def test_older_pages(person, world):
    bot, user_id, chat_id = world
    sent = [bot.ok("sendMessage", chat_id=chat_id, text=f"t{i}") for i in range(60)]
    newest = state(person, user_id, bot.id)["chat"]
    assert len(newest["messages"]) == 50 and newest["has_more"] is True
    older = get(person, f"/sandbox/chats/{user_id}/{bot.id}/history",
                before_message_id=newest["messages"][0]["message_id"])
    assert set(older) == {"chat_id", "status", "messages", "callback_answers", "has_more",
                          "events", "click_answers"}
    assert [m["message_id"] for m in older["messages"]] == list(range(1, 12))
    assert older["has_more"] is False and [e["kind"] for e in older["events"]] == ["start"]
    assert sent[0]["message_id"] == 2
    path = f"/sandbox/chats/{user_id}/{bot.id}/history"
    assert_invalid(person.client.get(path), "before_message_id")
    assert_invalid(person.client.get(path, query_string={"before_message_id": "x"}),
                   "before_message_id")
    assert_invalid(person.client.get(path, query_string={"before_message_id": 999}),
                   "before_message_id")


def test_the_inspector_reads_what_the_bot_received(person, world):
    bot, user_id, chat_id = world
    mine = person.ok("userSendMessage", user_id=user_id, bot_id=bot.id, text="hello")
    start, said = bot.ok("getUpdates")
    sent = bot.ok("sendMessage", chat_id=chat_id, text="pick", reply_markup=KEYBOARD)
    query_id = person.ok("userClickButton", user_id=user_id, bot_id=bot.id,
                         message_id=sent["message_id"], callback_data="go")["callback_query_id"]
    [clicked] = bot.ok("getUpdates", offset=said["update_id"] + 1)
    bot.ok("answerCallbackQuery", callback_query_id=query_id, text="ok")
    path = f"/sandbox/chats/{user_id}/{bot.id}/inspect"

    mine_seen = get(person, path, message_id=mine["message_id"])
    assert set(mine_seen) == {"chat_id", "message", "events", "callback_answers", "calls"}
    assert mine_seen["message"] == mine and mine_seen["chat_id"] == chat_id
    [event] = mine_seen["events"]
    assert event["kind"] == "message" and event["update"] == said
    assert get(person, path, message_id=1)["events"][0]["update"] == start

    theirs = get(person, path, message_id=sent["message_id"])
    assert theirs["message"] == sent
    [click] = theirs["events"]
    assert click["kind"] == "click" and click["update"] == clicked
    assert [a["text"] for a in theirs["callback_answers"]] == ["ok"]

    by_event = get(person, path, event_id=click["event_id"])
    assert by_event == {"chat_id": chat_id, "event": click,
                        "callback_answers": theirs["callback_answers"]}
    bot.ok("deleteMessage", chat_id=chat_id, message_id=sent["message_id"])
    assert get(person, path, message_id=sent["message_id"])["message"] is None
    assert_invalid(person.client.get(path, query_string={"message_id": 999}), "message_id")
    assert_invalid(person.client.get(path, query_string={"event_id": 999}), "event_id")
    assert_invalid(person.client.get(path), "message_id")


def test_another_chats_event_is_not_this_chats(person, world):
    bot, user_id, _ = world
    other = person.ok("createUser")["user_id"]
    person.ok("userStart", user_id=other, bot_id=bot.id)
    theirs = state(person, other, bot.id)["events"][0]["event_id"]
    assert_invalid(person.client.get(f"/sandbox/chats/{user_id}/{bot.id}/inspect",
                                     query_string={"event_id": theirs}), "event_id")


def chat_list(person, user_id, since=None) -> dict:
    query = {} if since is None else {"since": since}
    return get(person, f"/sandbox/users/{user_id}/chats", **query)


def test_the_chat_list_and_the_read_marker(person, world):
    bot, user_id, chat_id = world
    second = person.ok("createBot", username="quiet_bot", display_name="Quiet")["bot"]
    listed = chat_list(person, user_id)
    assert listed["entries"] == [
        {"bot_id": bot.id, "display_name": "Shop", "state": "active", "preview": "/start promo",
         "date": listed["entries"][0]["date"], "unread": 0},
        {"bot_id": second["id"], "display_name": "Quiet", "state": "not started", "preview": "",
         "date": None, "unread": 0}]
    assert chat_list(person, user_id, listed["version"]) == {"version": listed["version"],
                                                             "changed": False}
    for i in range(3):
        sent = bot.ok("sendMessage", chat_id=chat_id, text=f"news {i}")
    listed = chat_list(person, user_id, listed["version"])
    assert listed["changed"] is True
    assert (listed["entries"][0]["preview"], listed["entries"][0]["unread"]) == ("news 2", 3)
    read = f"/sandbox/chats/{user_id}/{bot.id}/read"
    answer = person.client.post(read, json={"message_id": sent["message_id"] - 1},
                                headers={"X-CSRF-Token": person.csrf})
    assert answer.status_code == 200 and answer.get_json() == {"ok": True, "result": True}
    assert chat_list(person, user_id)["entries"][0]["unread"] == 1
    # The marker only moves forward, and not past the newest message.
    person.client.post(read, json={"message_id": 1}, headers={"X-CSRF-Token": person.csrf})
    assert chat_list(person, user_id)["entries"][0]["unread"] == 1
    person.client.post(read, json={"message_id": 10**9}, headers={"X-CSRF-Token": person.csrf})
    assert chat_list(person, user_id)["entries"][0]["unread"] == 0
    bot.ok("sendMessage", chat_id=chat_id, text="one more")
    assert chat_list(person, user_id)["entries"][0]["unread"] == 1
    assert_failure(person.client.post(read, json={"message_id": 1}), 403, "CSRF_FAILED")
    for bad in ({}, {"message_id": -1}, {"message_id": "2"}, {"message_id": 1, "x": 1}):
        refused = person.client.post(read, json=bad, headers={"X-CSRF-Token": person.csrf})
        assert_failure(refused, 400, "INVALID_PARAMETER")
    assert_failure(person.client.post(f"/sandbox/chats/{user_id}/{second['id']}/read",
                                      json={"message_id": 1},
                                      headers={"X-CSRF-Token": person.csrf}),
                   404, "CHAT_NOT_FOUND")
    assert_invalid(person.client.get("/sandbox/users/999/chats"), "user_id")


@pytest.mark.parametrize("path", [
    "/sandbox/chats/1/1/state", "/sandbox/chats/1/1/history?before_message_id=1",
    "/sandbox/chats/1/1/inspect?message_id=1", "/sandbox/users/1/chats",
    "/sandbox/bots/1/pulse"])
def test_signed_out_reads_are_refused(client, world, path):
    stranger = client.application.test_client()
    assert_failure(stranger.get(path), 401, "UNAUTHORIZED")
    assert_failure(stranger.post("/sandbox/chats/1/1/read", json={"message_id": 1}), 401,
                   "UNAUTHORIZED")


def test_polls_are_written_to_the_access_log_at_debug(app, person, world, caplog):
    bot, user_id, _ = world
    with caplog.at_level(logging.DEBUG, logger="botsvc.access"):
        state(person, user_id, bot.id)
        chat_list(person, user_id)
        person.ok("userSendMessage", user_id=user_id, bot_id=bot.id, text="hi")
    levels = {record.getMessage().split(" ")[1]: record.levelno for record in caplog.records
              if record.name == "botsvc.access"}
    assert levels == {f"/sandbox/chats/{user_id}/{bot.id}/state": logging.DEBUG,
                      f"/sandbox/users/{user_id}/chats": logging.DEBUG,
                      "/sandbox/api/userSendMessage": logging.INFO}


def test_a_second_person_sees_the_same_positions(client, world):
    bot, user_id, _ = world
    second = Person(client.application.test_client())
    assert second.sign_in().status_code == 303
    assert state(second, user_id, bot.id)["membership"] == "active"


def test_the_polls_read_index_ranges(app, person, world):
    """What a page asks every second or two: no statement reads a whole
    table or index (the plan check of userGetChat's paging, applied here).
    Listing the chats, when they changed, lists every bot: that one is a
    list of bots by design."""
    bot, user_id, chat_id = world
    for i in range(20):
        bot.ok("sendMessage", chat_id=chat_id, text=f"t{i}", reply_markup=KEYBOARD)
    held = state(person, user_id, bot.id)["version"]
    bot.ok("editMessageText", chat_id=chat_id, message_id=5, text="new")
    listed = chat_list(person, user_id)["version"]
    conn = thread_connection(app.config["SETTINGS"].db_path)   # the requests' own

    def polls():
        current = state(person, user_id, bot.id, held)["version"]   # the changes
        assert state(person, user_id, bot.id, current)["changed"] is False
        chat_list(person, user_id, listed)

    selects = statements_of(conn, polls)
    assert any("sandbox_message_revisions" in s for s in selects)
    assert any("sandbox_chat_versions v" in s for s in selects)   # the chat list's version
    for statement in selects:
        assert full_scans(conn, statement) == [], statement


def test_the_inspector_shows_the_calls_that_sent_and_changed_a_message(person, world):
    bot, user_id, chat_id = world
    sent = bot.ok("sendMessage", chat_id=chat_id, text="v1")
    other = bot.ok("sendMessage", chat_id=chat_id, text="another")
    bot.ok("editMessageText", chat_id=chat_id, message_id=sent["message_id"], text="v2")
    bot.error("editMessageText", 400, "INVALID_PARAMETER", chat_id=chat_id,
              message_id=sent["message_id"], text="")
    bot.error("deleteMessage", 404, "CHAT_NOT_FOUND", chat_id="vc_" + "0" * 40,
              message_id=sent["message_id"])                      # another chat: not this one
    bot.ok("deleteMessage", chat_id=chat_id, message_id=sent["message_id"])
    path = f"/sandbox/chats/{user_id}/{bot.id}/inspect"
    seen = get(person, path, message_id=sent["message_id"])["calls"]
    assert [(c["kind"], c["call"]["method"], c["call"]["ok"]) for c in seen] == [
        ("sent", "sendMessage", True), ("changed", "editMessageText", True),
        ("changed", "editMessageText", False), ("changed", "deleteMessage", True)]
    assert seen[0]["call"]["result"] == sent
    assert seen[0]["call"]["params"] == {"chat_id": chat_id, "text": "v1"}
    assert seen[0]["call"] == person.ok("getBotCalls", bot_id=bot.id,
                                        method="sendMessage")["calls"][-1]
    assert [c["kind"] for c in get(person, path, message_id=other["message_id"])["calls"]] == [
        "sent"]
    mine = person.ok("userSendMessage", user_id=user_id, bot_id=bot.id, text="hi")
    assert get(person, path, message_id=mine["message_id"])["calls"] == []


def test_each_message_of_an_album_shows_the_one_call_that_sent_them(person, world):
    bot, user_id, chat_id = world
    uploaded = multipart(bot, "uploadFile", {"file": (image_bytes("PNG", (40, 30)), "a.png")})
    photo = uploaded.get_json()["result"]["file_id"]
    album = bot.ok("sendMediaGroup", chat_id=chat_id, media=[{"type": "photo", "media": photo}] * 2)
    path = f"/sandbox/chats/{user_id}/{bot.id}/inspect"
    for message in album:
        [call] = get(person, path, message_id=message["message_id"])["calls"]
        assert call["kind"] == "sent" and call["call"]["result"] == album
