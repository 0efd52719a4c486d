"""A bot's pulse (GET /sandbox/bots/<bot>/pulse): its delivery, its pending
updates, its webhook's attempts and since when they fail, its faults when the
testing tools are on, the service clock; exact shapes, through Flask's test
client."""
from __future__ import annotations

import pytest

from botsvc.sandbox.calls import schema_fields
from botsvc.sandbox.pulse import failing_since
from tests.support.contract import BotClient, assert_invalid

pytestmark = pytest.mark.call_log   # the pulse shows the bot's calls


def attempt(started_at: int, http_status: int | None = None, error: str | None = None) -> dict:
    record = {"update_id": 1, "attempt": 1, "started_at": started_at, "duration_ms": 5}
    if http_status is not None:
        record["http_status"] = http_status
    if error is not None:
        record["error"] = error
    return record


@pytest.mark.parametrize("deliveries, since", [
    ([], None),
    ([attempt(30, 200), attempt(20, 500)], None),
    ([attempt(30, 500), attempt(20, error="timeout"), attempt(10, 204), attempt(5, 500)], 20),
    ([attempt(30, 302), attempt(20, 404)], 20),     # a redirect is a failure
    ([attempt(30, error="connection refused")], 30),
])
def test_failing_since_is_the_first_failure_after_the_last_success(deliveries, since):
    assert failing_since(deliveries) == since


@pytest.fixture
def app(make_app):
    return make_app(test_tools=True)


@pytest.fixture
def bot(person, client):
    created = person.ok("createBot", username="pulse_bot", display_name="Pulse")
    return BotClient(client, created["bot"], created["token"])


def pulse(person, bot_id: int, **query) -> dict:
    response = person.client.get(f"/sandbox/bots/{bot_id}/pulse", query_string=query)
    assert response.status_code == 200, response.get_json()
    return response.get_json()["result"]


def test_a_polling_bot(person, bot):
    user = person.ok("createUser")["user_id"]
    person.ok("userStart", user_id=user, bot_id=bot.id)
    person.ok("injectFault", bot_id=bot.id, method="getMe", error_code="RATE_LIMITED", count=3)
    seen = pulse(person, bot.id)
    assert set(seen) == {"bot", "calls", "older_cursor", "empty_polls", "last_poll_at", "recent_polls", "mode",
                         "webhook", "deliveries", "failing_since", "faults", "clock",
                         "clock_moves"}
    assert seen["bot"] == {"id": bot.id, "username": "pulse_bot", "display_name": "Pulse",
                           "disabled": False}
    assert (seen["mode"], seen["webhook"], seen["deliveries"], seen["failing_since"]) == (
        "polling", {"url": "", "pending_update_count": 1}, [], None)
    assert seen["faults"] == [{"method": "getMe", "error_code": "RATE_LIMITED", "delay_ms": 0,
                               "remaining": 3}]
    assert seen["clock"] == person.ok("getClock")


def test_unknown_bot_and_bad_filters(person, bot):
    assert_invalid(person.client.get("/sandbox/bots/999/pulse"), "bot_id")
    for query, field in [({"failures_only": "yes"}, "failures_only"),
                         ({"after_call": "-1"}, "after_call"),
                         # declared by getBotCalls or not, a time that is not one is refused
                         ({"since": "yesterday"}, "since")]:
        assert_invalid(person.client.get(f"/sandbox/bots/{bot.id}/pulse", query_string=query),
                       field)


def test_no_faults_without_the_testing_tools(make_app):
    from tests.sandbox.sandbox_client import Person

    someone = Person(make_app().test_client())
    assert someone.sign_in().status_code == 303
    bot_id = someone.ok("createBot", username="plain_bot")["bot"]["id"]
    response = someone.client.get(f"/sandbox/bots/{bot_id}/pulse")
    assert response.status_code == 200 and response.get_json()["result"]["faults"] is None


def test_a_webhook_bot_failing_since_its_first_failed_attempt(person, bot, db):
    bot.ok("setWebhook", url="https://hooks.example.net/hook", secret_token="a-secret-token-of-16")
    at = person.ok("getClock")["now"]
    for n, (status, error) in enumerate([(200, None), (500, None), (None, "timed out")]):
        db.execute("INSERT INTO webhook_deliveries (bot_id, update_id, attempt, started_at,"
                   " duration_ms, http_status, error) VALUES (?, 7, ?, ?, 12, ?, ?)",
                   (bot.id, n + 1, at - 30 + n * 10, status, error))
    seen = pulse(person, bot.id)
    assert seen["mode"] == "webhook"
    assert seen["webhook"]["url"] == "https://hooks.example.net/hook"
    assert [d["attempt"] for d in seen["deliveries"]] == [3, 2, 1]
    assert seen["deliveries"][0] == {"update_id": 7, "attempt": 3, "started_at": at - 10,
                                     "duration_ms": 12, "error": "timed out"}
    assert seen["failing_since"] == at - 20


def test_the_calls_newest_first_with_failures_and_filters(person, bot):
    user = person.ok("createUser")["user_id"]
    chat_id = person.ok("userStart", user_id=user, bot_id=bot.id)["chat_id"]
    assert [u["update_id"] for u in bot.ok("getUpdates")]          # recorded: it had updates
    bot.ok("getMe")
    refused = bot.error("sendMessage", 404, "CHAT_NOT_FOUND", chat_id="vc_" + "0" * 40, text="x")
    sent = bot.ok("sendMessage", chat_id=chat_id, text="hello")
    bot.ok("getUpdates", offset=99)                                 # counted, not recorded
    seen = pulse(person, bot.id)
    assert [c["method"] for c in seen["calls"]] == ["sendMessage", "sendMessage", "getMe",
                                                    "getUpdates"]
    failure = seen["calls"][1]
    assert (failure["ok"], failure["http_status"], failure["error_code"],
            failure["description"]) == (False, 404, "CHAT_NOT_FOUND", refused["description"])
    assert seen["calls"][0]["result"] == sent
    detail = {"detail": True} if "detail" in schema_fields("getBotCalls") else {}
    assert seen["calls"] == person.ok("getBotCalls", bot_id=bot.id, limit=50, **detail)["calls"]
    assert seen["empty_polls"] == 1 and seen["last_poll_at"] is not None
    assert seen["recent_polls"] == 1            # the recorded poll of the last 10 s
    only = pulse(person, bot.id, failures_only="1")["calls"]
    assert [c["call_id"] for c in only] == [failure["call_id"]]
    assert [c["method"] for c in pulse(person, bot.id, method="getMe")["calls"]] == ["getMe"]
    newest = seen["calls"][0]["call_id"]
    assert pulse(person, bot.id, after_call=newest)["calls"] == []
    bot.ok("getMe")
    assert [c["method"] for c in pulse(person, bot.id, after_call=newest)["calls"]] == ["getMe"]
    assert_invalid(person.client.get(f"/sandbox/bots/{bot.id}/pulse",
                                      query_string={"method": "noSuchMethod"}), "method")


def test_a_burst_is_listed_whole_and_a_fresh_page_reaches_older_calls(person, bot):
    bot.ok("getMe")
    newest = pulse(person, bot.id)["calls"][0]["call_id"]
    for _ in range(258):                     # more than a few of getBotCalls' pages
        bot.ok("getMe")
    burst = pulse(person, bot.id, after_call=newest)
    ids = [c["call_id"] for c in burst["calls"]]
    assert len(ids) == 258 and ids == sorted(ids, reverse=True) and min(ids) > newest
    assert burst["older_cursor"] is None
    fresh = pulse(person, bot.id)
    assert len(fresh["calls"]) == 50
    listed, cursor = fresh["calls"], fresh["older_cursor"]
    while cursor:                            # the page's "Older calls", as it asks
        older = person.ok("getBotCalls", bot_id=bot.id, limit=100, cursor=cursor)
        listed, cursor = listed + older["calls"], older["next_cursor"]
    assert [c["call_id"] for c in listed] == ids + [newest]


def test_query_filters_become_getbotcalls_values(app, monkeypatch):
    """The query's texts become the JSON values getBotCalls' schema takes;
    which filters exist is the schema's to say (here: all of them)."""
    from botsvc.sandbox import calls
    from botsvc.sandbox import pulse as pulse_route

    monkeypatch.setattr(calls, "schema_fields", lambda name: frozenset(
        {"bot_id", "method", "failures_only", "chat_id", "since", "until", "search", "detail"}))
    query = {"method": "sendMessage", "failures_only": "1", "chat_id": "-100123",
             "since": "1700000000", "until": "1700000600", "search": "@alice"}
    with app.test_request_context("/", query_string=query):
        assert pulse_route._call_filters() == {
            "method": "sendMessage", "failures_only": True, "chat_id": -100123,
            "since": 1700000000, "until": 1700000600, "search": "@alice", "detail": True}
    # text stays text, for the schema to refuse; "0" and empty values are no filter
    with app.test_request_context("/", query_string={"chat_id": "vc_ab", "since": "soon",
                                                     "failures_only": "0", "search": ""}):
        assert pulse_route._call_filters() == {"chat_id": "vc_ab", "since": "soon",
                                               "detail": True}


def test_the_polling_rate_counts_the_last_10_seconds(person, bot):
    user = person.ok("createUser")["user_id"]
    person.ok("userStart", user_id=user, bot_id=bot.id)
    assert bot.ok("getUpdates")                      # recorded: it had an update
    assert pulse(person, bot.id)["recent_polls"] == 1
    person.ok("advanceClock", seconds=9)
    assert pulse(person, bot.id)["recent_polls"] == 1
    person.ok("advanceClock", seconds=2)             # 11 s on: out of the window at once
    seen = pulse(person, bot.id)
    assert seen["recent_polls"] == 0 and seen["last_poll_at"] <= seen["clock"]["now"] - 11
