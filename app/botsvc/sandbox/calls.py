"""The sandbox's one door to the messenger: the operator methods of /manage/v1,
looked up in their registry and run through the same execution path
(the method's schema, then its handler). Nothing here knows a rule.
"""
from __future__ import annotations

from flask import current_app

from botsvc.catalogue.body import RequestBody
from botsvc.db import get_db
from botsvc.errors import ApiError, ErrorCode
from botsvc.manage.dispatch import OPERATOR_METHODS, execute

# What the pages may call: the bot manager, the users, and what a developer
# reads about a bot. The testing tools that change the installation (the
# clock, faults, reset) only where they exist at all: BOTSVC_TEST_TOOLS=1.
SANDBOX_METHODS = frozenset({
    "createBot", "rotateToken", "setBotDisabled", "setPlatformDisabled", "listBots",
    "createUser", "userStart", "userStop", "userBlock", "userSendMessage",
    "userClickButton", "userGetChat", "userSendMedia",
    "getClock", "getWebhookDeliveries", "getBotCalls", "exportChat",
    "advanceClock", "injectFault", "clearFaults", "reset",
    "redeliverUpdate", "resendCall",
})


def is_callable(name: str) -> bool:
    method = OPERATOR_METHODS.get(name)
    return (name in SANDBOX_METHODS and method is not None
            and (not method.test_tool or current_app.config["SETTINGS"].test_tools))


def schema_fields(name: str) -> frozenset[str]:
    """The parameters operator method ``name`` declares (its one schema)."""
    return frozenset(OPERATOR_METHODS[name].schema.fields)


def run(name: str, body: RequestBody | dict):
    """Run operator method ``name`` on a parsed request body (or plain params)."""
    if not is_callable(name):
        raise ApiError(ErrorCode.METHOD_NOT_FOUND, f"Method {name} not found")
    if isinstance(body, dict):
        body = RequestBody(body)
    return execute(OPERATOR_METHODS[name], get_db(), body)
