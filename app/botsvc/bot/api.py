"""A bot's handle on its /v2 API: every method of the catalogue (methods.py,
generated), over the transport that retries as the contract asks."""
from __future__ import annotations

from typing import Any

from botsvc.bot.aio import AsyncTransport
from botsvc.bot.methods import AsyncMethods, Methods
from botsvc.bot.transport import RetryPolicy, Transport


class Api(Methods):
    """``Api(base_url, token).send_message(chat_id, "hi")``: each call returns
    its result or raises BotError after the retries the contract allows."""

    def __init__(self, base_url: str, token: str, *, policy: RetryPolicy | None = None):
        self.transport = Transport(base_url, token, policy)

    def _call(self, method: str, params: dict[str, Any], idempotency_key: str | None) -> Any:
        return self.transport.call(method, params, idempotency_key)

    def call(self, method: str, /, *, idempotency_key: str | None = None, **params: Any) -> Any:
        """Any method by its contract name, e.g. ``call("getMe")``."""
        return self.transport.call(method, params, idempotency_key)

    def close(self) -> None:
        self.transport.close()


class AsyncApi(AsyncMethods):
    """The same methods, awaited: ``await api.send_message(chat_id, "hi")``."""

    def __init__(self, base_url: str, token: str, *, policy: RetryPolicy | None = None,
                 use_httpx: bool | None = None):
        self.transport = AsyncTransport(base_url, token, policy, use_httpx)

    async def _call(self, method: str, params: dict[str, Any],
                    idempotency_key: str | None) -> Any:
        return await self.transport.call(method, params, idempotency_key)

    async def call(self, method: str, /, *, idempotency_key: str | None = None,
                   **params: Any) -> Any:
        return await self.transport.call(method, params, idempotency_key)

    async def aclose(self) -> None:
        await self.transport.aclose()
