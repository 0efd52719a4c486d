"""Save the list (GET /sandbox/bots/<bot>/calls.json): every kept call the
page's filters select, as getBotCalls gives them, in a file to download;
through Flask's test client."""
from __future__ import annotations

import re

import pytest

from tests.sandbox.sandbox_client import Person
from tests.support.contract import BotClient, assert_invalid

pytestmark = pytest.mark.call_log


@pytest.fixture
def bot(person, client):
    created = person.ok("createBot", username="saved_bot", display_name="Saved")
    return BotClient(client, created["bot"], created["token"])


def saved(person, bot_id: int, **query):
    response = person.client.get(f"/sandbox/bots/{bot_id}/calls.json", query_string=query)
    assert response.status_code == 200, response.get_json()
    return response


def every_call(person, bot_id: int, **filters) -> list[dict]:
    """getBotCalls' pages, read to the end, as the sandbox's API answers them."""
    found, cursor = [], None
    while True:
        page = person.ok("getBotCalls", bot_id=bot_id, limit=100, detail=True, **filters,
                         **({"cursor": cursor} if cursor else {}))
        found += page["calls"]
        cursor = page["next_cursor"]
        if not cursor:
            return found


def test_every_kept_call_the_filters_select_as_get_bot_calls_gives_them(person, bot):
    for _ in range(120):
        bot.ok("getMe")
    bot.error("sendMessage", 400, "INVALID_PARAMETER", chat_id="x", text="")
    response = saved(person, bot.id)
    assert response.mimetype == "application/json"
    disposition = response.headers["Content-Disposition"]
    assert re.fullmatch(r'attachment; filename="botsvc-calls-saved_bot-\d{8}-\d{6}\.json"',
                        disposition), disposition
    assert response.headers["Cache-Control"] == "no-store"
    whole = response.get_json()
    assert set(whole) == {"bot", "saved_at", "getBotCalls", "calls"}
    assert whole["bot"] == {"id": bot.id, "username": "saved_bot"}
    assert whole["getBotCalls"] == {"bot_id": bot.id, "detail": True}
    assert whole["calls"] == every_call(person, bot.id)
    assert len(whole["calls"]) == 121
    failed = saved(person, bot.id, failures_only="1", method="sendMessage").get_json()
    assert failed["getBotCalls"] == {"bot_id": bot.id, "method": "sendMessage",
                                     "failures_only": True, "detail": True}
    assert failed["calls"] == every_call(person, bot.id, method="sendMessage",
                                         failures_only=True)
    assert [c["error_code"] for c in failed["calls"]] == ["INVALID_PARAMETER"]


def test_a_filter_refused_and_who_may_ask(person, bot):
    refused = person.client.get(f"/sandbox/bots/{bot.id}/calls.json",
                                query_string={"method": "noSuchMethod"})
    assert_invalid(refused, "method")
    assert_invalid(person.client.get("/sandbox/bots/999999/calls.json"), "bot_id")
    bot.ok("getMe")
    stranger = Person(person.client.application.test_client())   # not signed in
    response = stranger.client.get(f"/sandbox/bots/{bot.id}/calls.json")
    assert response.status_code in (302, 303, 401) and b"getMe" not in response.get_data()
