"""A small typed client for botsvc: the operator API (/manage/v1) and a bot's
/v2 API. Results are the contract's JSON (dicts and lists) except where a
small dataclass reads better; every failure is one ``BotsvcError`` carrying
the envelope's ``error_code``, ``description`` and ``parameters``. Long
because it is the typed face of two APIs: a method for each operator method
a test uses, and for the common /v2 ones.

    operator = OperatorClient("http://127.0.0.1:8080", "admin-token")
    created = operator.create_bot("echo_bot")
    bot = BotApi(operator.base_url, created.token)
    bot.send_message(chat_id, "hello")
"""
from __future__ import annotations

import json
import os
from collections.abc import Iterator
from dataclasses import dataclass
from typing import Any

import requests

DEFAULT_TIMEOUT = 60.0   # an injected delay may hold a call up to 30 s


class BotsvcError(Exception):
    """A failure in the contract's envelope ``{ok: false, error_code,
    description, parameters}``, with the HTTP status and headers."""

    def __init__(self, http_status: int, error_code: str, description: str,
                 parameters: dict[str, Any], headers: dict[str, str] | None = None,
                 hint: str | None = None):
        super().__init__(f"{error_code} ({http_status}): {description}"
                         + (f"\n{hint}" if hint else ""))
        self.http_status = http_status
        self.error_code = error_code
        self.description = description
        self.parameters = parameters
        self.headers = headers or {}

    @property
    def retry_after(self) -> int | None:
        """Seconds to wait (RATE_LIMITED, IDEMPOTENCY_CONFLICT in progress)."""
        return self.parameters.get("retry_after")


@dataclass(frozen=True)
class Clock:
    now: int      # the service's clock, Unix seconds
    offset: int   # seconds ahead of the machine's clock


@dataclass(frozen=True)
class CreatedBot:
    bot: dict[str, Any]   # Bot: id, is_bot, username, display_name, description
    token: str

    @property
    def id(self) -> int:
        return self.bot["id"]


class _Endpoint:
    """POST ``{base_url}{prefix}/<method>`` with a bearer token; unwraps the envelope."""

    def __init__(self, base_url: str, prefix: str, token: str, *, timeout: float,
                 session: requests.Session | None):
        self.base_url = base_url.rstrip("/")
        self._url = self.base_url + prefix
        self._token = token
        self.timeout = timeout
        self.session = session or requests.Session()

    def call(self, method: str, params: dict[str, Any] | None = None, *,
             files: dict[str, Any] | None = None,
             headers: dict[str, str] | None = None) -> Any:
        """Call ``method`` and return its ``result``; raise BotsvcError on failure.
        ``None`` values are left out (the contract refuses JSON null)."""
        __tracebackhide__ = True   # a failure points at the test's line
        params = {k: v for k, v in (params or {}).items() if v is not None}
        sent = {"Authorization": f"Bearer {self._token}", **(headers or {})}
        if files:
            data = {k: v if isinstance(v, str) else json.dumps(v) for k, v in params.items()}
            response = self.session.post(f"{self._url}/{method}", data=data, files=files,
                                         headers=sent, timeout=self.timeout)
        else:
            response = self.session.post(f"{self._url}/{method}", json=params, headers=sent,
                                         timeout=self.timeout)
        return unwrap(response)


def unwrap(response: requests.Response) -> Any:
    """The ``result`` of a success, or the failure as BotsvcError."""
    __tracebackhide__ = True   # a failure points at the test's line
    try:
        body = response.json()
    except ValueError:
        raise BotsvcError(response.status_code, "INVALID_RESPONSE",
                          f"not a JSON answer: {response.text[:200]!r}", {}) from None
    if response.ok and body.get("ok") is True:
        return body["result"]
    raise BotsvcError(response.status_code, body.get("error_code", "UNKNOWN"),
                      body.get("description", ""), body.get("parameters") or {},
                      dict(response.headers))


class OperatorClient:
    """The operator API: bots, simulated users and the testing tools."""

    def __init__(self, base_url: str, admin_token: str, *, timeout: float = DEFAULT_TIMEOUT,
                 session: requests.Session | None = None):
        self._endpoint = _Endpoint(base_url, "/manage/v1", admin_token, timeout=timeout,
                                   session=session)
        self.base_url = self._endpoint.base_url

    def call(self, method: str, /, **params: Any) -> Any:
        __tracebackhide__ = True   # a failure points at the test's line
        try:
            return self._endpoint.call(method, params)
        except BotsvcError as failure:
            if (failure.http_status, failure.error_code) != (404, "METHOD_NOT_FOUND"):
                raise
            # The contract's 404 stays; the test's reader gets the likely reason.
            raise BotsvcError(failure.http_status, failure.error_code, failure.description,
                              failure.parameters, failure.headers,
                              hint=f"{method}: the server at {self.base_url} has no such"
                              " operator method. The testing tools (advanceClock,"
                              " injectFault, clearFaults, reset, redeliverUpdate, resendCall)"
                              " exist only on a server started with BOTSVC_TEST_TOOLS=1, and"
                              " the operator API only with BOTSVC_ADMIN_TOKEN set") from None

    # -- bots ---------------------------------------------------------------
    def create_bot(self, username: str, display_name: str | None = None,
                   description: str | None = None) -> CreatedBot:
        result = self.call("createBot", username=username, display_name=display_name,
                           description=description)
        return CreatedBot(result["bot"], result["token"])

    def rotate_token(self, bot_id: int) -> str:
        return self.call("rotateToken", bot_id=bot_id)["token"]

    def set_bot_disabled(self, bot_id: int, disabled: bool) -> None:
        self.call("setBotDisabled", bot_id=bot_id, disabled=disabled)

    def set_platform_disabled(self, disabled: bool) -> None:
        self.call("setPlatformDisabled", disabled=disabled)

    def list_bots(self) -> list[dict[str, Any]]:
        return self.call("listBots")

    # -- simulated users ------------------------------------------------------
    def create_user(self, display_name: str | None = None) -> int:
        return self.call("createUser", display_name=display_name)["user_id"]

    def user_start(self, user_id: int, bot_id: int,
                   start_parameter: str | None = None) -> dict[str, Any]:
        return self.call("userStart", user_id=user_id, bot_id=bot_id,
                         start_parameter=start_parameter)

    def user_stop(self, user_id: int, bot_id: int) -> None:
        self.call("userStop", user_id=user_id, bot_id=bot_id)

    def user_block(self, user_id: int, bot_id: int) -> None:
        self.call("userBlock", user_id=user_id, bot_id=bot_id)

    def user_send_message(self, user_id: int, bot_id: int, text: str,
                          reply_to_message_id: int | None = None) -> dict[str, Any]:
        return self.call("userSendMessage", user_id=user_id, bot_id=bot_id, text=text,
                         reply_to_message_id=reply_to_message_id)

    def user_click_button(self, user_id: int, bot_id: int, message_id: int,
                          callback_data: str) -> str:
        return self.call("userClickButton", user_id=user_id, bot_id=bot_id,
                         message_id=message_id, callback_data=callback_data)["callback_query_id"]

    def user_get_chat(self, user_id: int, bot_id: int, limit: int | None = None,
                      before_message_id: int | None = None, *, wait_ms: int | None = None,
                      wait_after_message_id: int | None = None) -> dict[str, Any]:
        """One page: the newest ``limit`` messages (older than
        ``before_message_id`` when given), oldest first, and ``has_more``;
        with ``wait_ms``, once the page holds a message above
        ``wait_after_message_id`` (or the wait is over)."""
        return self.call("userGetChat", user_id=user_id, bot_id=bot_id, limit=limit,
                         before_message_id=before_message_id, wait_ms=wait_ms or None,
                         wait_after_message_id=wait_after_message_id)

    def user_chat_pages(self, user_id: int, bot_id: int,
                        limit: int | None = None) -> Iterator[dict[str, Any]]:
        """The chat's pages, newest first, until the oldest message."""
        before = None
        while True:
            page = self.user_get_chat(user_id, bot_id, limit, before)
            yield page
            if not page["has_more"] or not page["messages"]:
                return
            before = page["messages"][0]["message_id"]

    def user_send_media(self, user_id: int, bot_id: int, path: str | os.PathLike,
                        caption: str | None = None, type: str | None = None) -> dict[str, Any]:
        with open(path, "rb") as fh:
            return self._endpoint.call(
                "userSendMedia", {"user_id": user_id, "bot_id": bot_id, "caption": caption,
                                  "type": type},
                files={"file": (os.path.basename(path), fh)})

    # -- testing tools ----------------------------------------------------------
    def get_clock(self) -> Clock:
        return Clock(**self.call("getClock"))

    def advance_clock(self, seconds: int) -> Clock:
        return Clock(**self.call("advanceClock", seconds=seconds))

    def inject_fault(self, bot_id: int, method: str, error_code: str | None = None,
                     delay_ms: int | None = None, count: int | None = None) -> None:
        self.call("injectFault", bot_id=bot_id, method=method, error_code=error_code,
                  delay_ms=delay_ms, count=count)

    def clear_faults(self, bot_id: int) -> None:
        self.call("clearFaults", bot_id=bot_id)

    def reset(self) -> None:
        self.call("reset")

    def get_webhook_deliveries(self, bot_id: int, limit: int | None = None,
                               cursor: str | None = None) -> dict[str, Any]:
        return self.call("getWebhookDeliveries", bot_id=bot_id, limit=limit, cursor=cursor)

    def get_bot_calls(self, bot_id: int, limit: int | None = None, cursor: str | None = None,
                      method: str | None = None, failures_only: bool | None = None, *,
                      after_call_id: int | None = None,
                      wait_ms: int | None = None) -> dict[str, Any]:
        """One page of the bot's call log: ``{calls, next_cursor, empty_polls,
        last_poll_at}``, newest first; only the calls after ``after_call_id``
        when given; with ``wait_ms``, once a call is there (or the wait is over)."""
        return self.call("getBotCalls", bot_id=bot_id, limit=limit, cursor=cursor,
                         method=method, failures_only=failures_only,
                         after_call_id=after_call_id, wait_ms=wait_ms or None)

    def calls_after(self, bot_id: int, after_call_id: int, method: str | None = None, *,
                    detail: bool | None = None, wait_ms: int = 0) -> list[dict[str, Any]]:
        """The bot's kept calls after ``after_call_id``, oldest first, every
        page of them; the first read waits up to ``wait_ms`` for one."""
        calls: list[dict[str, Any]] = []
        cursor, wait = None, wait_ms
        while True:
            page = self.call("getBotCalls", bot_id=bot_id, method=method, detail=detail,
                             after_call_id=after_call_id, cursor=cursor, wait_ms=wait or None)
            calls[:0] = reversed(page["calls"])
            cursor, wait = page["next_cursor"], 0
            if cursor is None:
                return calls

    def bot_calls(self, bot_id: int, method: str | None = None,
                  failures_only: bool | None = None) -> Iterator[dict[str, Any]]:
        """Every kept record of the bot's calls, newest first, across all pages."""
        cursor = None
        while True:
            page = self.get_bot_calls(bot_id, cursor=cursor, method=method,
                                      failures_only=failures_only)
            yield from page["calls"]
            cursor = page["next_cursor"]
            if cursor is None:
                return

    def webhook_deliveries(self, bot_id: int) -> Iterator[dict[str, Any]]:
        """Every recorded attempt, newest first, across all pages."""
        cursor = None
        while True:
            page = self.get_webhook_deliveries(bot_id, cursor=cursor)
            yield from page["deliveries"]
            cursor = page["next_cursor"]
            if cursor is None:
                return


class BotApi:
    """A bot's /v2 API. ``call`` reaches every method; the common ones have
    their own typed helpers."""

    def __init__(self, base_url: str, token: str, *, timeout: float = DEFAULT_TIMEOUT,
                 session: requests.Session | None = None):
        self._endpoint = _Endpoint(base_url, "/v2", token, timeout=timeout, session=session)
        self.base_url = self._endpoint.base_url
        self.token = token

    def call(self, method: str, /, *, files: dict[str, Any] | None = None,
             idempotency_key: str | None = None, **params: Any) -> Any:
        __tracebackhide__ = True   # a failure points at the test's line
        headers = {"Idempotency-Key": idempotency_key} if idempotency_key else None
        return self._endpoint.call(method, params, files=files, headers=headers)

    def get_me(self) -> dict[str, Any]:
        return self.call("getMe")

    def get_updates(self, offset: int = 0, limit: int | None = None) -> list[dict[str, Any]]:
        return self.call("getUpdates", offset=offset, limit=limit)

    def send_message(self, chat_id: str, text: str, **extra: Any) -> dict[str, Any]:
        return self.call("sendMessage", chat_id=chat_id, text=text, **extra)

    def answer_callback_query(self, callback_query_id: str, text: str | None = None,
                              show_alert: bool | None = None) -> bool:
        return self.call("answerCallbackQuery", callback_query_id=callback_query_id, text=text,
                         show_alert=show_alert)

    def set_webhook(self, url: str, secret_token: str,
                    drop_pending_updates: bool | None = None) -> bool:
        return self.call("setWebhook", url=url, secret_token=secret_token,
                         drop_pending_updates=drop_pending_updates)

    def delete_webhook(self, drop_pending_updates: bool | None = None) -> bool:
        return self.call("deleteWebhook", drop_pending_updates=drop_pending_updates)

    def get_webhook_info(self) -> dict[str, Any]:
        return self.call("getWebhookInfo")

    def upload_file(self, path: str | os.PathLike) -> dict[str, Any]:
        with open(path, "rb") as fh:
            return self.call("uploadFile", files={"file": (os.path.basename(path), fh)})

    def get_file(self, file_id: str) -> dict[str, Any]:
        return self.call("getFile", file_id=file_id)
