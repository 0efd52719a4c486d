"""What the walk of the sandbox found, on the server's side, through Flask's
test client: a click the bot answered keeps its answer once its card is
deleted (the whole views carry the answers of their clicks); the pulse
shows a webhook URL without a token or its query's values; it says when the
service clock moved, so a row dated before a move carries no mark; the Bots
list's "Chat with it" opens that bot's chat. The browser's side:
tests/sandbox/test_sandbox_devtools_browser.py."""
from __future__ import annotations

import pytest

from botsvc.sandbox.pulse import shown_webhook_url
from tests.support.contract import BotClient

pytestmark = pytest.mark.call_log   # the pulse shows the bot's calls

TOKEN = "123456:" + "A" * 43
KEYBOARD = {"inline_keyboard": [[{"text": "Go", "callback_data": "go"}]]}


@pytest.fixture
def app(make_app):
    return make_app(test_tools=True)


@pytest.fixture
def world(person, client):
    created = person.ok("createBot", username="walk_bot", display_name="Walk")
    bot = BotClient(client, created["bot"], created["token"])
    user_id = person.ok("createUser", display_name="Ada")["user_id"]
    chat_id = person.ok("userStart", user_id=user_id, bot_id=bot.id)["chat_id"]
    return bot, user_id, chat_id


def got(person, path: str, **query) -> dict:
    response = person.client.get(path, query_string=query)
    assert response.status_code == 200, response.get_json()
    return response.get_json()["result"]


def test_an_answered_click_keeps_its_answer_once_its_card_is_deleted(person, world):
    bot, user_id, chat_id = world
    card = bot.ok("sendMessage", chat_id=chat_id, text="Pick", reply_markup=KEYBOARD)
    query_id = person.ok("userClickButton", user_id=user_id, bot_id=bot.id,
                         message_id=card["message_id"], callback_data="go")["callback_query_id"]
    bot.ok("answerCallbackQuery", callback_query_id=query_id, text="Done")
    bot.ok("deleteMessage", chat_id=chat_id, message_id=card["message_id"])
    for n in range(3):   # a page of history before the card's page
        bot.ok("sendMessage", chat_id=chat_id, text=f"after {n}")
    view = got(person, f"/sandbox/chats/{user_id}/{bot.id}/state")
    assert view["chat"]["callback_answers"] == []   # the card is not on the page
    [click] = [e for e in view["events"] if e["kind"] == "click"]
    [answer] = view["click_answers"]
    assert answer == {"callback_query_id": query_id, "message_id": card["message_id"],
                      "data": "go", "text": "Done", "show_alert": False, "date": answer["date"]}
    assert click["callback_query_id"] == query_id
    newest = view["chat"]["messages"][-1]["message_id"]
    history = got(person, f"/sandbox/chats/{user_id}/{bot.id}/history",
                  before_message_id=newest)
    assert history["click_answers"] == [answer]


def test_an_unanswered_click_has_no_answer(person, world):
    bot, user_id, chat_id = world
    card = bot.ok("sendMessage", chat_id=chat_id, text="Pick", reply_markup=KEYBOARD)
    person.ok("userClickButton", user_id=user_id, bot_id=bot.id,
              message_id=card["message_id"], callback_data="go")
    assert got(person, f"/sandbox/chats/{user_id}/{bot.id}/state")["click_answers"] == []


@pytest.mark.parametrize("url, shown", [
    ("https://hooks.example.net/hook", "https://hooks.example.net/hook"),
    (f"https://hooks.example.net/hook/{TOKEN}", "https://hooks.example.net/hook/[token]"),
    ("https://hooks.example.net/h?key=s3cret&sig=abc",
     "https://hooks.example.net/h?key=[redacted]&sig=[redacted]"),
    (f"https://hooks.example.net/{TOKEN}?t={TOKEN}&flag",
     "https://hooks.example.net/[token]?t=[redacted]&[redacted]"),
    ("https://hooks.example.net/h#frag", "https://hooks.example.net/h#[redacted]"),
    ("", ""),
])
def test_the_webhook_url_shown_keeps_no_token_and_no_query_value(url, shown):
    assert shown_webhook_url(url) == shown


def test_the_pulse_shows_the_webhook_url_redacted(person, world):
    bot = world[0]
    bot.ok("setWebhook", url=f"https://hooks.example.net/hook/{bot.token}?key=s3cret",
           secret_token="a-secret-token-of-16")
    seen = got(person, f"/sandbox/bots/{bot.id}/pulse")
    assert seen["webhook"]["url"] == "https://hooks.example.net/hook/[token]?key=[redacted]"
    # The vitals; the call list shows the setWebhook record as getBotCalls keeps it.
    assert "s3cret" not in str({k: v for k, v in seen.items() if k != "calls"})


def test_the_pulse_says_when_the_clock_moved(person, world):
    bot = world[0]
    assert got(person, f"/sandbox/bots/{bot.id}/pulse")["clock_moves"] == []
    bot.ok("getMe")
    before = person.ok("getClock")
    person.ok("advanceClock", seconds=120)
    bot.ok("getMe")
    person.ok("advanceClock", seconds=3600)
    seen = got(person, f"/sandbox/bots/{bot.id}/pulse")
    first, second = seen["clock_moves"]
    assert (first["offset"], second["offset"]) == (120, 3720)
    assert before["now"] + 120 <= first["moved_at"] <= before["now"] + 122
    assert second["moved_at"] >= first["moved_at"] + 3600
    older, newer = sorted(seen["calls"], key=lambda c: c["call_id"])
    assert older["date"] < first["moved_at"] <= newer["date"] < second["moved_at"]
    person.ok("reset")
    bot = BotClient(person.client, person.ok("createBot", username="again_bot")["bot"], "")
    assert got(person, f"/sandbox/bots/{bot.id}/pulse")["clock_moves"] == []


def test_chat_with_it_on_the_bots_list_opens_that_bots_chat(person, world):
    bot = world[0]
    page = person.client.get("/sandbox/bots").get_data(as_text=True)
    assert f'class="btn chat-with-it" href="/sandbox/chats?bot={bot.id}"' in page
