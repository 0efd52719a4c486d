"""exportChat in process: the transcript and the pytest module of one
conversation (Start with a parameter, a text, a click answered with an edit
and an answer, a photo from the user, a deletion), a part of a chat, the
bound and the call log's window, and every refusal the contract names."""
from __future__ import annotations

import base64
import io
import json
import sqlite3

import pytest

from botsvc.domain import conversation, conversation_steps
from tests.support.contract import ADMIN_TOKEN, assert_failure, assert_invalid
from tests.support.media_files import image_bytes

pytestmark = pytest.mark.call_log   # the bot's side comes from its call log
KEYBOARD = {"inline_keyboard": [[{"text": "Yes", "callback_data": "yes"}]]}


@pytest.fixture
def app(make_app):
    return make_app(test_tools=True)


@pytest.fixture
def scanner_settings(offline_scanner) -> dict:
    return offline_scanner


def user_sends_photo(client, user_id: int, bot_id: int, png: bytes) -> dict:
    response = client.post("/manage/v1/userSendMedia", data={
        "user_id": str(user_id), "bot_id": str(bot_id), "caption": "me",
        "file": (io.BytesIO(png), "me.png")}, headers={"Authorization": f"Bearer {ADMIN_TOKEN}"})
    assert response.status_code == 200, response.get_json()
    return response.get_json()["result"]


@pytest.fixture
def talked(bot, operator, new_user, client):
    """A whole conversation, the bot played by hand through /v2."""
    user = new_user()
    chat_id = operator("userStart", user_id=user, bot_id=bot.id,
                       start_parameter="promo")["chat_id"]
    offset = bot.ok("getUpdates")[-1]["update_id"] + 1
    welcome = bot.ok("sendMessage", chat_id=chat_id, text="Welcome", reply_markup=KEYBOARD)
    said = operator("userSendMessage", user_id=user, bot_id=bot.id, text="hello")
    offset = bot.ok("getUpdates", offset=offset)[-1]["update_id"] + 1
    bot.ok("sendMessage", chat_id=chat_id, text="hello")
    query = operator("userClickButton", user_id=user, bot_id=bot.id,
                     message_id=welcome["message_id"], callback_data="yes")["callback_query_id"]
    offset = bot.ok("getUpdates", offset=offset)[-1]["update_id"] + 1
    bot.ok("editMessageText", chat_id=chat_id, message_id=welcome["message_id"],
           text="You said yes")
    bot.ok("answerCallbackQuery", callback_query_id=query, text="Saved", show_alert=True)
    png = image_bytes("PNG")
    user_sends_photo(client, user, bot.id, png)
    bot.ok("getUpdates", offset=offset)
    nice = bot.ok("sendMessage", chat_id=chat_id, text="Nice photo")
    bot.ok("deleteMessage", chat_id=chat_id, message_id=nice["message_id"])
    return {"user_id": user, "bot_id": bot.id, "said": said, "png": png, "chat_id": chat_id}


def transcript(operator, talked, **extra) -> dict:
    exported = operator("exportChat", user_id=talked["user_id"], bot_id=talked["bot_id"],
                        format="transcript", **extra)
    assert exported["file_name"].endswith("_conversation.json")
    return json.loads(exported["content"])


def test_the_transcript_holds_each_action_and_reaction_by_place(operator, talked, bot):
    exported = transcript(operator, talked)
    photo = exported["steps"][3]["user"]
    assert base64.b64decode(photo.pop("content_base64")) == talked["png"]
    assert exported == {
        "format": "botsvc-transcript/1", "bot": bot.bot["username"], "complete": True,
        "notes": [], "steps": [
            {"user": {"action": "start", "start_parameter": "promo"},
             "bot": [{"reaction": "message", "message": {"from": "bot", "index": 1},
                      "type": "text", "text": "Welcome", "reply_markup": KEYBOARD}]},
            {"user": {"action": "say", "text": "hello"},
             "bot": [{"reaction": "message", "message": {"from": "bot", "index": 2},
                      "type": "text", "text": "hello"}]},
            {"user": {"action": "click", "message": {"from": "bot", "index": 1},
                      "callback_data": "yes"},
             "bot": [{"reaction": "edit", "method": "editMessageText",
                      "message": {"from": "bot", "index": 1}, "type": "text",
                      "text": "You said yes", "reply_markup": KEYBOARD},
                     {"reaction": "answer", "text": "Saved", "show_alert": True}]},
            {"user": {"action": "send_file", "type": "photo", "file_name": "me.png",
                      "caption": "me"},
             "bot": [{"reaction": "message", "message": {"from": "bot", "index": 3},
                      "type": "text", "text": "Nice photo"},
                     {"reaction": "delete", "message": {"from": "bot", "index": 3}}]}]}
    assert talked["chat_id"] not in json.dumps(exported)   # no id travels


def test_the_pytest_module_is_one_readable_test(operator, talked, bot):
    exported = operator("exportChat", user_id=talked["user_id"], bot_id=talked["bot_id"])
    assert exported["file_name"] == f"test_{bot.bot['username']}_conversation.py"
    module = exported["content"]
    compile(module, exported["file_name"], "exec")
    assert "TIMEOUT = 10" in module
    assert module.count("def test_") == 1
    for line in ("user.start('promo')", "user.say('hello')", "user.click(bot_message(1), 'yes')",
                 "user.expect_message('hello')", "user.expect_answer('Saved', show_alert=True)",
                 "user.send_file(PHOTO_1, 'me.png', type='photo', caption='me')",
                 "user.expect_message('Nice photo')", "user.expect_deleted(bot_message(3))",
                 "user.done()"):
        assert f"    {line}" in module, line
    assert talked["chat_id"] not in module and "message_id" not in module


def test_after_a_message_replays_from_its_start_and_checks_what_followed(operator, talked):
    """The part after "hello" clicks the welcome card, sent before it: the
    replay starts at the chat's Start, a lead-in whose reactions are awaited
    and numbered, not checked, so bot_message(1) is the same card in both."""
    exported = transcript(operator, talked, after_message_id=talked["said"]["message_id"])
    steps = exported["steps"]
    assert [(s["user"]["action"], s.get("lead_in", False)) for s in steps] == [
        ("start", True), ("say", True), ("click", False), ("send_file", False)]
    assert [r["message"] for r in steps[0]["bot"] + steps[1]["bot"]] == [
        {"from": "bot", "index": 1}, {"from": "bot", "index": 2}]
    assert steps[2]["user"]["message"] == {"from": "bot", "index": 1}
    assert [r["reaction"] for r in steps[2]["bot"]] == ["edit", "answer"]
    assert steps[3]["bot"][-1] == {"reaction": "delete", "message": {"from": "bot", "index": 3}}
    assert exported["complete"] is True
    assert exported["notes"][0].startswith("Exported from the middle of the chat: the test first"
                                           " replays the chat from the chat's Start")
    module = operator("exportChat", user_id=talked["user_id"], bot_id=talked["bot_id"],
                      after_message_id=talked["said"]["message_id"])["content"]
    assert ("    user.start('promo')\n    user.skip_reactions(1)\n\n    user.say('hello')\n"
            "    user.skip_reactions(1)\n\n    user.click(bot_message(1), 'yes')\n") in module


def test_a_part_that_clicks_a_card_from_before_a_restart_replays_from_the_first_start(
        operator, bot, new_user):
    user = new_user()
    chat_id = operator("userStart", user_id=user, bot_id=bot.id, start_parameter="one")["chat_id"]
    offset = bot.ok("getUpdates")[-1]["update_id"] + 1
    card = bot.ok("sendMessage", chat_id=chat_id, text="Pick", reply_markup=KEYBOARD)
    operator("userStop", user_id=user, bot_id=bot.id)
    operator("userStart", user_id=user, bot_id=bot.id)
    offset = bot.ok("getUpdates", offset=offset)[-1]["update_id"] + 1
    again = bot.ok("sendMessage", chat_id=chat_id, text="Welcome back")
    operator("userClickButton", user_id=user, bot_id=bot.id, message_id=card["message_id"],
             callback_data="yes")
    exported = transcript(operator, {"user_id": user, "bot_id": bot.id},
                          after_message_id=again["message_id"])
    assert [(s["user"], s.get("lead_in", False)) for s in exported["steps"]] == [
        ({"action": "start", "start_parameter": "one"}, True), ({"action": "stop"}, True),
        ({"action": "start"}, True),
        ({"action": "click", "message": {"from": "bot", "index": 1}, "callback_data": "yes"},
         False)]
    assert exported["complete"] is True


def test_only_the_newest_actions_are_read(operator, talked, monkeypatch):
    monkeypatch.setattr(conversation, "MAX_ACTIONS", 3)
    exported = transcript(operator, talked)
    # The newest three: say, click, send_file; the click's message is older.
    assert [s["user"]["action"] for s in exported["steps"]] == ["say", "send_file"]
    assert "only its newest 3" in exported["notes"][0]


def test_a_conversation_older_than_the_call_log_says_so(operator, talked):
    operator("advanceClock", seconds=25 * 3600)
    exported = transcript(operator, talked)
    # No reaction left, so no bot message to click: the click is left out too.
    assert [(s["user"]["action"], s["bot"]) for s in exported["steps"]] == [
        ("start", []), ("say", []), ("send_file", [])]
    assert exported["complete"] is False
    assert "no longer covers the start" in exported["notes"][0]
    module = operator("exportChat", user_id=talked["user_id"], bot_id=talked["bot_id"])["content"]
    assert "# Note: The bot's call log no longer covers the start" in module


@pytest.mark.parametrize("field, value", [("user_id", 999), ("bot_id", 999),
                                          ("format", "yaml"), ("after_message_id", "x")])
def test_unknown_user_bot_or_format_names_the_field(operator, talked, field, value):
    params = {"user_id": talked["user_id"], "bot_id": talked["bot_id"], field: value}
    assert_invalid(operator.call("exportChat", **params), field)


def test_a_message_of_another_chat_names_after_message_id(operator, talked, bot, new_user):
    other = new_user()
    operator("userStart", user_id=other, bot_id=bot.id)
    theirs = operator("userSendMessage", user_id=other, bot_id=bot.id, text="mine")
    assert_invalid(operator.call("exportChat", user_id=talked["user_id"], bot_id=bot.id,
                                 after_message_id=theirs["message_id"]), "after_message_id")


def test_a_user_who_never_started_the_bot_has_no_chat(operator, bot, new_user):
    assert_failure(operator.call("exportChat", user_id=new_user(), bot_id=bot.id),
                   404, "CHAT_NOT_FOUND")


def test_the_journal_is_read_by_index_whatever_the_chat_length(app):
    """Bounded like userGetChat's pages: one seek for where the part starts,
    then a walk from the newest end that stops after the bound (no sort of
    the whole chat)."""
    conn = sqlite3.connect(app.config["SETTINGS"].db_path)
    plans = {sql: " ".join(row[3] for row in conn.execute(f"EXPLAIN QUERY PLAN {sql}",
                                                          (1,) * sql.count("?")))
             for sql in (conversation.FIRST_EVENT_SQL, conversation.NEWEST_EVENTS_SQL)}
    conn.close()
    assert plans == {
        conversation.FIRST_EVENT_SQL: "SEARCH chat_events USING COVERING INDEX"
                                      " chat_events_by_place (chat_ref=? AND after_message_id>?)",
        conversation.NEWEST_EVENTS_SQL: "SEARCH chat_events USING INDEX chat_events_by_chat"
                                        " (chat_ref=? AND id>?)"}


def test_files_past_the_embedding_bound_are_left_out_and_said(operator, talked, monkeypatch):
    monkeypatch.setattr(conversation_steps, "MAX_EMBEDDED_FILE_BYTES", len(talked["png"]) - 1)
    exported = transcript(operator, talked)
    assert [s["user"]["action"] for s in exported["steps"]] == ["start", "say", "click"]
    assert exported["notes"] == ["Action 4 sent a file that is over 2 MiB; it is left out."]
    # Its step is left out whole: the bot's answer to it takes no place.
    assert [r["message"]["index"] for s in exported["steps"] for r in s["bot"]
            if r["reaction"] == "message"] == [1, 2]


def test_a_webhook_bots_reactions_follow_its_deliveries(bot, operator, new_user, db):
    """No getUpdates in the log: the webhook's delivery records say when the
    bot had each update (written here as the deliverer writes them)."""
    user = new_user()
    started = operator("userStart", user_id=user, bot_id=bot.id)
    chat_id = started["chat_id"]

    def delivered(update_id: int) -> None:
        date = db.execute("SELECT MAX(date) FROM chat_events").fetchone()[0]
        db.execute("INSERT INTO webhook_deliveries (bot_id, update_id, attempt, started_at,"
                   " duration_ms, http_status) VALUES (?, ?, 1, ?, 5, 200)",
                   (bot.id, update_id, date))

    delivered(started["update_id"])
    welcome = bot.ok("sendMessage", chat_id=chat_id, text="Hi", reply_markup=KEYBOARD)
    operator("userClickButton", user_id=user, bot_id=bot.id, message_id=welcome["message_id"],
             callback_data="yes")
    delivered(started["update_id"] + 1)
    bot.ok("editMessageText", chat_id=chat_id, message_id=welcome["message_id"], text="Thanks")
    exported = transcript(operator, {"user_id": user, "bot_id": bot.id})
    assert exported["notes"] == []
    steps = exported["steps"]
    assert [(s["user"]["action"], [r["reaction"] for r in s["bot"]]) for s in steps] == [
        ("start", ["message"]), ("click", ["edit"])]
    assert steps[1]["bot"][0] == {"reaction": "edit", "method": "editMessageText",
                                  "message": {"from": "bot", "index": 1}, "type": "text",
                                  "text": "Thanks", "reply_markup": KEYBOARD}


def test_an_edit_in_the_same_second_as_the_next_action_stays_with_its_step(
        bot, operator, new_user, db):
    """A webhook bot whose deliveries and calls are all dated to one second:
    the edit answering the click came before the user's next text, and the
    chat's versions say so (the dates could not)."""
    user = new_user()
    started = operator("userStart", user_id=user, bot_id=bot.id)
    chat_id = started["chat_id"]
    card = bot.ok("sendMessage", chat_id=chat_id, text="Hi", reply_markup=KEYBOARD)
    operator("userClickButton", user_id=user, bot_id=bot.id, message_id=card["message_id"],
             callback_data="yes")
    bot.ok("editMessageText", chat_id=chat_id, message_id=card["message_id"], text="Thanks")
    operator("userSendMessage", user_id=user, bot_id=bot.id, text="next")
    second = db.execute("SELECT MAX(date) FROM chat_events").fetchone()[0]
    db.execute("UPDATE bot_calls SET date = ?", (second,))
    db.execute("UPDATE chat_events SET date = ?", (second,))
    for update_id in range(started["update_id"], started["update_id"] + 3):
        db.execute("INSERT INTO webhook_deliveries (bot_id, update_id, attempt, started_at,"
                   " duration_ms, http_status) VALUES (?, ?, 1, ?, 5, 200)",
                   (bot.id, update_id, second))
    exported = transcript(operator, {"user_id": user, "bot_id": bot.id})
    assert [(s["user"]["action"], [r["reaction"] for r in s["bot"]])
            for s in exported["steps"]] == [("start", ["message"]), ("click", ["edit"]),
                                            ("say", [])]


def test_a_reply_names_its_message_by_place(bot, operator, new_user):
    user = new_user()
    chat_id = operator("userStart", user_id=user, bot_id=bot.id)["chat_id"]
    bot.ok("getUpdates")
    hello = bot.ok("sendMessage", chat_id=chat_id, text="Hello")
    operator("userSendMessage", user_id=user, bot_id=bot.id, text="hi there",
             reply_to_message_id=hello["message_id"])
    exported = transcript(operator, {"user_id": user, "bot_id": bot.id})
    assert exported["steps"][1] == {"user": {"action": "say", "text": "hi there",
                                             "reply_to": {"from": "bot", "index": 1}},
                                    "bot": []}
    module = operator("exportChat", user_id=user, bot_id=bot.id)["content"]
    assert "    user.say('hi there', reply_to=bot_message(1))\n" in module
