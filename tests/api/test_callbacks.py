"""Callback buttons: userClickButton (operator API and CLI), the
callback_query update, answerCallbackQuery once, and the user's view."""
import json
import re

import pytest
from click.testing import CliRunner

from botsvc.cli import main as cli

MARKUP = {"inline_keyboard": [
    [{"text": "Yes", "callback_data": "vote:yes"}, {"text": "No", "callback_data": "vote:no"}],
    [{"text": "Site", "url": "https://example.org"}, {"text": "Code", "copy_text": "C0DE"}],
]}


def of_bytes(size: int) -> str:
    return "€" * (size // 3) + "a" * (size % 3)


@pytest.fixture
def with_buttons(bot, chat):
    return bot.ok("sendMessage", chat_id=chat.chat_id, text="Vote?", reply_markup=MARKUP)


def click(operator, chat, bot, message_id, data):
    return operator.call("userClickButton", user_id=chat.user_id, bot_id=bot.id,
                         message_id=message_id, callback_data=data)


def click_refused(operator, chat, bot, message_id, data, status, code, field) -> dict:
    response = click(operator, chat, bot, message_id, data)
    body = response.get_json()
    assert (response.status_code, body["error_code"]) == (status, code), body
    if field is None:  # a membership refusal names the chat instead
        assert body["parameters"] == {"chat_id": chat.chat_id}
    else:
        assert body["parameters"]["field"] == field
    return body


def clicked(operator, chat, bot, message_id, data) -> str:
    return operator("userClickButton", user_id=chat.user_id, bot_id=bot.id,
                    message_id=message_id, callback_data=data)["callback_query_id"]


def answers(operator, chat, bot) -> list:
    return operator("userGetChat", user_id=chat.user_id, bot_id=bot.id)["callback_answers"]


def test_click_produces_a_callback_query_update(bot, chat, operator, with_buttons):
    query_id = clicked(operator, chat, bot, with_buttons["message_id"], "vote:no")
    assert re.fullmatch(r"[0-9a-f]{32}", query_id)
    update = bot.ok("getUpdates")[-1]
    assert set(update) == {"update_id", "callback_query"}
    assert update["callback_query"] == {"id": query_id, "chat_id": chat.chat_id,
                                        "message_id": with_buttons["message_id"],
                                        "data": "vote:no"}


def test_each_click_is_a_new_query(bot, chat, operator, with_buttons):
    first = clicked(operator, chat, bot, with_buttons["message_id"], "vote:yes")
    second = clicked(operator, chat, bot, with_buttons["message_id"], "vote:yes")
    assert first != second
    ids = [u["callback_query"]["id"] for u in bot.ok("getUpdates") if "callback_query" in u]
    assert ids == [first, second]


def test_answer_once_and_the_user_sees_it(bot, chat, operator, with_buttons):
    query_id = clicked(operator, chat, bot, with_buttons["message_id"], "vote:yes")
    assert answers(operator, chat, bot) == []
    assert bot.ok("answerCallbackQuery", callback_query_id=query_id, text="Counted",
                  show_alert=True) is True
    [seen] = answers(operator, chat, bot)
    assert seen["callback_query_id"] == query_id and seen["message_id"] == with_buttons["message_id"]
    assert seen["text"] == "Counted" and seen["show_alert"] is True
    assert isinstance(seen["date"], int) and seen["date"] > 0
    body = bot.error("answerCallbackQuery", 400, "INVALID_PARAMETER", callback_query_id=query_id,
                     text="Twice")
    assert body["parameters"]["field"] == "callback_query_id"
    assert [a["text"] for a in answers(operator, chat, bot)] == ["Counted"]


def test_answer_without_text_defaults_to_no_alert(bot, chat, operator, with_buttons):
    query_id = clicked(operator, chat, bot, with_buttons["message_id"], "vote:yes")
    assert bot.ok("answerCallbackQuery", callback_query_id=query_id) is True
    [seen] = answers(operator, chat, bot)
    assert seen["show_alert"] is False and seen["text"] == ""


def test_answers_are_listed_in_the_order_given(bot, chat, operator, with_buttons):
    first = clicked(operator, chat, bot, with_buttons["message_id"], "vote:yes")
    second = clicked(operator, chat, bot, with_buttons["message_id"], "vote:no")
    bot.ok("answerCallbackQuery", callback_query_id=second, text="2")
    bot.ok("answerCallbackQuery", callback_query_id=first, text="1")
    assert [a["callback_query_id"] for a in answers(operator, chat, bot)] == [second, first]


@pytest.mark.parametrize("query_id", ["0" * 32, "", "not-an-id"])
def test_unknown_callback_query_id(bot, query_id):
    body = bot.error("answerCallbackQuery", 400, "INVALID_PARAMETER", callback_query_id=query_id)
    assert body["parameters"]["field"] == "callback_query_id"


def test_another_bots_callback_query_id_is_never_accepted(bot, chat, operator, with_buttons,
                                                          new_bot):
    query_id = clicked(operator, chat, bot, with_buttons["message_id"], "vote:yes")
    intruder = new_bot()
    body = intruder.error("answerCallbackQuery", 400, "INVALID_PARAMETER",
                          callback_query_id=query_id, text="hijack")
    assert body["parameters"]["field"] == "callback_query_id"
    assert answers(operator, chat, bot) == []
    assert bot.ok("answerCallbackQuery", callback_query_id=query_id, text="mine") is True


def test_answer_text_up_to_1024_bytes(bot, chat, operator, with_buttons):
    query_id = clicked(operator, chat, bot, with_buttons["message_id"], "vote:yes")
    body = bot.error("answerCallbackQuery", 400, "INVALID_PARAMETER", callback_query_id=query_id,
                     text=of_bytes(1025))
    assert body["parameters"]["field"] == "text"
    assert bot.ok("answerCallbackQuery", callback_query_id=query_id, text=of_bytes(1024))
    assert answers(operator, chat, bot)[0]["text"] == of_bytes(1024)


@pytest.mark.parametrize("params, field", [
    ({}, "callback_query_id"),
    ({"callback_query_id": 5}, "callback_query_id"),
    ({"callback_query_id": "x", "show_alert": "true"}, "show_alert"),
    ({"callback_query_id": "x", "show_alert": 1}, "show_alert"),
    ({"callback_query_id": "x", "text": 3}, "text"),
    ({"callback_query_id": "x", "url": "https://a.org"}, "url"),
])
def test_answer_parameters_are_validated(bot, params, field):
    body = bot.error("answerCallbackQuery", 400, "INVALID_PARAMETER", **params)
    assert body["parameters"]["field"] == field


@pytest.mark.parametrize("data", ["vote:maybe", "https://example.org", "C0DE", "Yes"])
def test_only_a_callback_button_on_the_message_can_be_clicked(bot, chat, operator,
                                                              with_buttons, data):
    click_refused(operator, chat, bot, with_buttons["message_id"], data,
                  400, "INVALID_PARAMETER", "callback_data")
    assert [u for u in bot.ok("getUpdates") if "callback_query" in u] == []


def test_buttons_follow_edits_of_the_keyboard(bot, chat, operator, with_buttons):
    message_id = with_buttons["message_id"]
    bot.ok("editMessageReplyMarkup", chat_id=chat.chat_id, message_id=message_id,
           reply_markup={"inline_keyboard": [[{"text": "New", "callback_data": "new"}]]})
    click_refused(operator, chat, bot, message_id, "vote:yes", 400, "INVALID_PARAMETER",
                  "callback_data")
    assert clicked(operator, chat, bot, message_id, "new")
    bot.ok("editMessageReplyMarkup", chat_id=chat.chat_id, message_id=message_id,
           reply_markup={"inline_keyboard": []})
    click_refused(operator, chat, bot, message_id, "new", 400, "INVALID_PARAMETER",
                  "callback_data")


def test_click_on_a_deleted_or_unknown_message(bot, chat, operator, with_buttons):
    bot.ok("deleteMessage", chat_id=chat.chat_id, message_id=with_buttons["message_id"])
    click_refused(operator, chat, bot, with_buttons["message_id"], "vote:yes",
                  404, "MESSAGE_NOT_FOUND", "message_id")
    click_refused(operator, chat, bot, 999, "vote:yes", 404, "MESSAGE_NOT_FOUND", "message_id")


def test_click_on_the_users_own_message(bot, chat, operator):
    own = operator("userSendMessage", user_id=chat.user_id, bot_id=bot.id, text="vote:yes")
    click_refused(operator, chat, bot, own["message_id"], "vote:yes",
                  404, "MESSAGE_NOT_FOUND", "message_id")


def test_click_on_a_message_in_another_users_chat(bot, chat, operator, start_chat):
    other = start_chat(bot)
    theirs = bot.ok("sendMessage", chat_id=other.chat_id, text="Vote?", reply_markup=MARKUP)
    click_refused(operator, chat, bot, theirs["message_id"], "vote:yes",
                  404, "MESSAGE_NOT_FOUND", "message_id")


def test_click_through_one_bot_on_another_bots_message(bot, chat, operator, new_bot, start_chat):
    other_bot = new_bot()
    other_chat = start_chat(other_bot, user_id=chat.user_id)
    for _ in range(4):
        theirs = other_bot.ok("sendMessage", chat_id=other_chat.chat_id, text="Vote?",
                              reply_markup=MARKUP)
    click_refused(operator, chat, bot, theirs["message_id"], "vote:yes",
                  404, "MESSAGE_NOT_FOUND", "message_id")
    assert [u for u in bot.ok("getUpdates") if "callback_query" in u] == []


def test_click_needs_a_chat_with_that_bot(bot, operator, new_user, with_buttons, new_bot):
    stranger = new_user()
    response = operator.call("userClickButton", user_id=stranger, bot_id=bot.id,
                             message_id=with_buttons["message_id"], callback_data="vote:yes")
    assert (response.status_code, response.get_json()["error_code"]) == (404, "CHAT_NOT_FOUND")


def test_click_needs_active_membership(bot, chat, operator, with_buttons, start_chat):
    operator("userStop", user_id=chat.user_id, bot_id=bot.id)
    click_refused(operator, chat, bot, with_buttons["message_id"], "vote:yes",
                  403, "BOT_NOT_STARTED", None)
    operator("userBlock", user_id=chat.user_id, bot_id=bot.id)
    click_refused(operator, chat, bot, with_buttons["message_id"], "vote:yes",
                  403, "BOT_BLOCKED", None)


@pytest.mark.parametrize("params, field", [
    ({"user_id": 999}, "user_id"), ({"bot_id": 999}, "bot_id"),
    ({"message_id": 0}, "message_id"), ({"message_id": "1"}, "message_id"),
    ({"callback_data": ""}, "callback_data"), ({"callback_data": of_bytes(257)}, "callback_data"),
    ({"extra": 1}, "extra"),
])
def test_click_parameters_are_validated(bot, chat, operator, with_buttons, params, field):
    base = {"user_id": chat.user_id, "bot_id": bot.id,
            "message_id": with_buttons["message_id"], "callback_data": "vote:yes"}
    response = operator.call("userClickButton", **{**base, **params})
    body = response.get_json()
    assert (response.status_code, body["error_code"]) == (400, "INVALID_PARAMETER"), body
    assert body["parameters"]["field"] == field


def test_click_from_the_command_line(bot, chat, with_buttons, tmp_path):
    runner = CliRunner()
    result = runner.invoke(cli, ["user-click", str(chat.user_id), str(bot.id),
                                 str(with_buttons["message_id"]), "vote:no"],
                           env={"BOTSVC_DATA_DIR": str(tmp_path / "data")})
    assert result.exit_code == 0, result.output
    query_id = json.loads(result.stdout)["callback_query_id"]
    update = bot.ok("getUpdates")[-1]
    assert update["callback_query"]["id"] == query_id
    assert update["callback_query"]["data"] == "vote:no"
    refused = runner.invoke(cli, ["user-click", str(chat.user_id), str(bot.id),
                                  str(with_buttons["message_id"]), "nope"],
                            env={"BOTSVC_DATA_DIR": str(tmp_path / "data")})
    assert refused.exit_code == 1
