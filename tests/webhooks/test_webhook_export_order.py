"""exportChat's order for a webhook bot, every action, delivery and call in
one second (the machine's clock held): each reaction follows the action
whose update the bot had when it called, by when the delivery went out
(real HTTPS to a local receiver) and when the call arrived, never by the
second both are dated to (docs/export.md). The same conversation with the
delivery records gone is placed by when each action was journaled."""
from __future__ import annotations

import json

import pytest

pytestmark = pytest.mark.call_log   # the bot's side comes from its call log
CHOICES = {"inline_keyboard": [[{"text": "A", "callback_data": "a"},
                                {"text": "B", "callback_data": "b"}]]}


@pytest.fixture
def app(make_app, ca_file):
    return make_app(webhook_allow_private=True, webhook_ca_bundle=ca_file, test_tools=True)


@pytest.fixture
def hooked(bot, operator, new_user, hook, run_pass, clock):
    """A chat with a webhook bot that has its Start and has sent a card:
    ``(user_id, chat_id, the card)``."""
    receiver = hook(bot)
    user = new_user()
    chat_id = operator("userStart", user_id=user, bot_id=bot.id)["chat_id"]
    run_pass()
    assert len(receiver.requests) == 1
    card = bot.ok("sendMessage", chat_id=chat_id, text="Pick", reply_markup=CHOICES)
    return user, chat_id, card


def outline(operator, user: int, bot_id: int) -> list[tuple]:
    """Each step's action and its reactions' kinds and texts."""
    exported = json.loads(operator("exportChat", user_id=user, bot_id=bot_id,
                                   format="transcript")["content"])
    assert exported["complete"] is True, exported["notes"]
    return [(s["user"]["action"], s["user"].get("text") or s["user"].get("callback_data"),
             [(r["reaction"], r.get("text")) for r in s["bot"]]) for s in exported["steps"]]


def test_an_earlier_edit_of_a_message_edited_again_stays_with_its_step(
        bot, operator, hooked, run_pass, clock):
    """The card is edited after each of two texts: the first edit (not the
    message's last, which the chat's versions place) follows the first
    text, though the second text's delivery is dated to the same second."""
    user, chat_id, card = hooked
    started = clock.now
    for text in ("first", "second"):
        operator("userSendMessage", user_id=user, bot_id=bot.id, text=text)
        run_pass()
        bot.ok("editMessageText", chat_id=chat_id, message_id=card["message_id"],
               text=f"Picked {text}")
    assert clock.now == started   # one second throughout
    assert outline(operator, user, bot.id) == [
        ("start", None, [("message", "Pick")]),
        ("say", "first", [("edit", "Picked first")]),
        ("say", "second", [("edit", "Picked second")])]


def click_both(bot, operator, hooked, run_pass) -> int:
    """Click A, the bot answers; click B, the bot answers. Returns the user."""
    user, _, card = hooked
    for data in ("a", "b"):
        query = operator("userClickButton", user_id=user, bot_id=bot.id,
                         message_id=card["message_id"], callback_data=data)["callback_query_id"]
        run_pass()
        bot.ok("answerCallbackQuery", callback_query_id=query, text=data.upper())
    return user


CLICKED = [("start", None, [("message", "Pick")]), ("click", "a", [("answer", "A")]),
           ("click", "b", [("answer", "B")])]


def test_a_webhook_bots_answers_to_two_clicks_in_one_second_follow_each_click(
        bot, operator, hooked, run_pass, clock):
    user = click_both(bot, operator, hooked, run_pass)
    assert outline(operator, user, bot.id) == CLICKED


def test_with_the_delivery_records_gone_the_journal_stamps_place_them(
        bot, operator, hooked, run_pass, clock, db):
    """Nothing says when the bot had its updates: each reaction follows the
    newest action journaled before the call arrived."""
    user = click_both(bot, operator, hooked, run_pass)
    db.execute("DELETE FROM webhook_deliveries")
    assert outline(operator, user, bot.id) == CLICKED
