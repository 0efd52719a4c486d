"""exportChat's order for a polling bot whose calls run side by side: a
reaction the bot called before its next getUpdates answer was made follows
the action before, though the service held the call until after that poll
(its record then written after the poll's) and every date is one second
(the machine's clock held). Placed by when each call arrived and when each
getUpdates answer was made (docs/export.md), not by the log's order."""
from __future__ import annotations

import json
import time
from concurrent.futures import ThreadPoolExecutor

import pytest

pytestmark = pytest.mark.call_log   # the bot's side comes from its call log
KEYBOARD = {"inline_keyboard": [[{"text": "Yes", "callback_data": "yes"}]]}
HELD_MS = 400   # long enough for the user's next text and the bot's poll (a few ms)


@pytest.fixture
def app(make_app):
    return make_app(test_tools=True)


def wait_until_claimed(db, bot_id: int) -> None:
    """Until the held call has taken its fault: it has arrived."""
    deadline = time.monotonic() + 10
    while db.execute("SELECT 1 FROM faults WHERE bot_id = ?", (bot_id,)).fetchone():
        assert time.monotonic() < deadline, "the held call never arrived"
        time.sleep(0.005)


def written(operator, bot_id: int, count: int) -> list[dict]:
    """The bot's records, oldest first, once the log holds ``count`` (calls
    answered side by side are written by the log's background batch)."""
    deadline = time.monotonic() + 10
    while len(calls := operator("getBotCalls", bot_id=bot_id)["calls"]) < count:
        assert time.monotonic() < deadline, calls
        time.sleep(0.05)
    return calls[::-1]


def a_clicked_card(bot, operator, new_user):
    """A user who started the bot and clicked its card, the click polled:
    (user, chat_id, the card, the callback_query_id, the next offset)."""
    user = new_user()
    chat_id = operator("userStart", user_id=user, bot_id=bot.id)["chat_id"]
    offset = bot.ok("getUpdates")[-1]["update_id"] + 1
    card = bot.ok("sendMessage", chat_id=chat_id, text="Pick", reply_markup=KEYBOARD)
    query = operator("userClickButton", user_id=user, bot_id=bot.id,
                     message_id=card["message_id"], callback_data="yes")["callback_query_id"]
    offset = bot.ok("getUpdates", offset=offset)[-1]["update_id"] + 1
    return user, chat_id, card, query, offset


@pytest.mark.parametrize("reaction", ["answer", "edit", "message"])
def test_a_reaction_called_before_the_next_poll_answered_follows_its_click(
        bot, operator, new_user, db, clock, reaction):
    """The bot answers the click (an answer, an edit of the card, a message)
    on a thread of its own; the service holds that call while the user says
    "next" and the bot's poll gets it. The reaction was called before: it
    follows the click, though its record, its message_id and (for the edit,
    the card's last) its chat version all came after "next"."""
    user, chat_id, card, query, offset = a_clicked_card(bot, operator, new_user)
    method, params = {
        "answer": ("answerCallbackQuery", {"callback_query_id": query, "text": "Saved"}),
        "edit": ("editMessageText", {"chat_id": chat_id, "message_id": card["message_id"],
                                     "text": "Saved"}),
        "message": ("sendMessage", {"chat_id": chat_id, "text": "Saved"})}[reaction]
    operator("injectFault", bot_id=bot.id, method=method, delay_ms=HELD_MS)
    with ThreadPoolExecutor(1) as pool:
        reacting = pool.submit(bot.ok, method, **params)
        wait_until_claimed(db, bot.id)
        operator("userSendMessage", user_id=user, bot_id=bot.id, text="next")
        assert [u["update_id"] for u in bot.ok("getUpdates", offset=offset)] == [offset]
        assert not reacting.done()   # the poll was answered while the call was held
        assert reacting.result()
    bot.ok("sendMessage", chat_id=chat_id, text="Got next")
    calls = written(operator, bot.id, 6)
    # The log's order is the order records were written: the held call's last.
    assert [c["method"] for c in calls][-3:] == ["getUpdates", method, "sendMessage"]
    assert len({c["date"] for c in calls}) == 1
    exported = json.loads(operator("exportChat", user_id=user, bot_id=bot.id,
                                   format="transcript")["content"])
    assert exported["complete"] is True, exported["notes"]
    assert [(s["user"]["action"], [(r["reaction"], r.get("text")) for r in s["bot"]])
            for s in exported["steps"]] == [
        ("start", [("message", "Pick")]), ("click", [(reaction, "Saved")]),
        ("say", [("message", "Got next")])]


def test_rows_from_before_the_stamps_are_placed_by_the_rules_of_before(
        bot, operator, new_user, db):
    """Records and journal entries from before migration 0019 keep no
    stamps: a bot's polls are then read in the log's order, as before."""
    user, chat_id, card, query, offset = a_clicked_card(bot, operator, new_user)
    bot.ok("editMessageText", chat_id=chat_id, message_id=card["message_id"], text="Yes")
    bot.ok("answerCallbackQuery", callback_query_id=query, text="Saved")
    operator("userSendMessage", user_id=user, bot_id=bot.id, text="next")
    bot.ok("getUpdates", offset=offset)
    bot.ok("sendMessage", chat_id=chat_id, text="Got next")
    stamped = operator("exportChat", user_id=user, bot_id=bot.id, format="transcript")
    db.execute("UPDATE bot_calls SET started_ns = NULL, answered_ns = NULL")
    db.execute("UPDATE chat_events SET recorded_ns = NULL")
    exported = operator("exportChat", user_id=user, bot_id=bot.id, format="transcript")
    assert exported == stamped
    assert [(s["user"]["action"], [r["reaction"] for r in s["bot"]])
            for s in json.loads(exported["content"])["steps"]] == [
        ("start", ["message"]), ("click", ["edit", "answer"]), ("say", ["message"])]
