"""The testing tools switched on, as BOTSVC_TEST_TOOLS=1 does."""
from __future__ import annotations

from types import SimpleNamespace

import pytest

from tests.support.contract import BotClient, Operator


@pytest.fixture
def app(make_app):
    return make_app(test_tools=True)


@pytest.fixture
def operator_for():
    """operator_for(app) -> (Operator, BotClient, chat): a bot with one
    started chat on an app the test made itself."""
    def make(app):
        operator = Operator(app.test_client())
        created = operator("createBot", username="other_settings_bot")
        bot = BotClient(app.test_client(), created["bot"], created["token"])
        user_id = operator("createUser")["user_id"]
        started = operator("userStart", user_id=user_id, bot_id=bot.id)
        return operator, bot, SimpleNamespace(user_id=user_id, chat_id=started["chat_id"])
    return make
