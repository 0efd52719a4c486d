"""The testing tools in the sandbox (BOTSVC_TEST_TOOLS=1): the service clock
and its advance control, faults for a bot (inject, see what is armed,
clear) and reset, through the same operator methods as /manage/v1, each a
change that needs the page's CSRF token; and the pages show them only when
the tools exist."""
from __future__ import annotations

import pytest

from tests.sandbox.sandbox_client import Person
from tests.support.contract import ADMIN_TOKEN, BotClient, assert_failure


@pytest.fixture
def app(make_app):
    return make_app(test_tools=True)


@pytest.fixture
def bot(person, client):
    created = person.ok("createBot", username="tools_bot")
    return BotClient(client, created["bot"], created["token"])


def test_the_clock_moves_from_the_page(person):
    before = person.ok("getClock")
    moved = person.ok("advanceClock", seconds=3600)
    assert moved["offset"] == before["offset"] + 3600
    assert person.ok("getClock")["offset"] == moved["offset"]
    assert_failure(person.client.post("/sandbox/api/advanceClock", json={"seconds": 60}), 403,
                   "CSRF_FAILED")
    assert_failure(person.call("advanceClock", seconds=0), 400, "INVALID_PARAMETER",
                   field="seconds")


def test_faults_for_the_open_bot(person, bot):
    assert person.ok("injectFault", bot_id=bot.id, method="sendMessage",
                     error_code="INTERNAL_ERROR", count=2) is True
    assert person.ok("injectFault", bot_id=bot.id, method="getMe", delay_ms=5) is True
    page = person.page(f"/sandbox/bots/{bot.id}")
    assert page.status_code == 200 and 'id="fault-form"' in page.text
    failure = bot.call("sendMessage", {"chat_id": "vc_" + "0" * 40, "text": "x"})
    assert failure.status_code == 500
    assert failure.get_json()["parameters"] == {"injected": True}
    assert person.ok("clearFaults", bot_id=bot.id) is True
    assert bot.call("getMe").status_code == 200


def test_reset_from_the_page_keeps_the_person_signed_in(person, bot, client):
    assert person.ok("reset") is True
    assert person.ok("listBots") == []
    assert bot.call("getMe").status_code == 401
    assert person.page("/sandbox/bots").status_code == 200


def test_the_same_answers_as_the_operator_api(person, client, bot):
    for method, params in [("advanceClock", {"seconds": 31536001}),
                           ("injectFault", {"bot_id": bot.id, "method": "nope"}),
                           ("injectFault", {"bot_id": 999, "method": "getMe"}),
                           ("clearFaults", {})]:
        mine = person.call(method, **params)
        theirs = client.post(f"/manage/v1/{method}", json=params,
                             headers={"Authorization": f"Bearer {ADMIN_TOKEN}"})
        assert mine.status_code == theirs.status_code == 400
        assert mine.get_json() == theirs.get_json()


def test_the_pages_show_the_tools_only_when_they_exist(make_app):
    for tools, shown in ((True, True), (False, False)):
        someone = Person(make_app(test_tools=tools).test_client())
        assert someone.sign_in().status_code == 303
        bot_id = someone.ok("createBot", username=f"page{int(tools)}_bot")["bot"]["id"]
        user_id = someone.ok("createUser")["user_id"]
        for path in (f"/sandbox/bots/{bot_id}", f"/sandbox/chats/{user_id}/{bot_id}"):
            page = someone.page(path)
            assert page.status_code == 200
            assert ('id="tools"' in page.text) is shown, path
            assert 'id="pulse"' in page.text and 'id="feed"' in page.text
