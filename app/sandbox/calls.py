"""The sandbox's one door to the messenger: the operator methods of /manage/v1,
looked up in their registry and run through the same execution path
(the method's schema, then its handler). Nothing here knows a rule.
"""
from __future__ import annotations

from app.body import RequestBody
from app.db import get_db
from app.errors import ApiError, ErrorCode
from app.manage.dispatch import OPERATOR_METHODS, execute

# What the pages may call. The testing tools (reset, clock, faults) stay on
# /manage/v1 only: a button should not be able to wipe an installation.
SANDBOX_METHODS = frozenset({
    "createBot", "rotateToken", "setBotDisabled", "setPlatformDisabled", "listBots",
    "createUser", "userStart", "userStop", "userBlock", "userSendMessage",
    "userClickButton", "userGetChat", "userSendMedia",
})


def is_callable(name: str) -> bool:
    return name in SANDBOX_METHODS and name in OPERATOR_METHODS


def run(name: str, body: RequestBody | dict):
    """Run operator method ``name`` on a parsed request body (or plain params)."""
    if not is_callable(name):
        raise ApiError(ErrorCode.METHOD_NOT_FOUND, f"Method {name} not found")
    if isinstance(body, dict):
        body = RequestBody(body)
    return execute(OPERATOR_METHODS[name], get_db(), body)
