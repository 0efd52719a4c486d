"""The async transport: the same requests, answers and retries as
transport.py, awaited.

With the ``bot-async`` extra (httpx), calls are made by httpx's
``AsyncClient``: many calls in flight cost no thread each. httpx was chosen
because its API is requests' own (sessions, timeouts, ``files=``), so the
two transports read alike, it keeps connections alive over HTTP/1.1, and it
is pure Python on top of h11, with nothing to compile. Without it the async
transport runs the requests transport in a worker thread
(``asyncio.to_thread``): the event loop is never held, one thread per
call in flight, and nothing more to install.
"""
from __future__ import annotations

import asyncio
import functools
import ssl
from typing import Any

from botsvc.bot.errors import BotError
from botsvc.bot.transport import RetryPolicy, Transport, build_request, network_error, read_answer

try:
    import httpx
except ImportError:   # the extra is optional: threads do the work without it
    httpx = None


@functools.cache
def _verified_context() -> ssl.SSLContext:
    return httpx.create_ssl_context()


def _tls_context(base_url: str) -> ssl.SSLContext:
    """httpx makes a TLS context for every client, loading the CA bundle
    (about 0.1 s): one made once per process serves every https client, and
    a plain http base_url (no redirect is followed) needs none loaded."""
    if base_url.startswith("https:"):
        return _verified_context()
    return ssl.SSLContext(ssl.PROTOCOL_TLS_CLIENT)


class AsyncTransport:
    """``await call(method, params)``: httpx when installed, else requests
    in a worker thread."""

    def __init__(self, base_url: str, token: str, policy: RetryPolicy | None = None,
                 use_httpx: bool | None = None):
        self.base_url, self.token = base_url.rstrip("/"), token
        self.policy = policy or RetryPolicy()
        self.uses_httpx = httpx is not None if use_httpx is None else use_httpx
        self._client = None
        self._threaded = None if self.uses_httpx else Transport(base_url, token, self.policy)

    async def call(self, method: str, params: dict[str, Any],
                   idempotency_key: str | None = None) -> Any:
        if self._threaded is not None:
            return await asyncio.to_thread(self._threaded.call, method, params, idempotency_key)
        request = build_request(self.base_url, self.token, method, params, idempotency_key)
        retry = 0
        while True:
            try:
                return await self._attempt(method, request)
            except BotError as error:
                pause = self.policy.pause_before_retry(error, retry)
                if pause is None:
                    raise
            await asyncio.sleep(pause)
            retry += 1

    async def _attempt(self, method: str, request) -> Any:
        if self._client is None:   # made in the loop that uses it
            self._client = httpx.AsyncClient(timeout=self.policy.timeout,
                                             verify=_tls_context(self.base_url))
        try:
            response = await self._client.post(request.url, headers=request.headers,
                                               json=request.json, data=request.data,
                                               files=request.files)
        except httpx.TransportError as exc:
            raise network_error(method, exc) from exc
        return read_answer(method, response.status_code, response.headers, response.content)

    async def aclose(self) -> None:
        if self._client is not None:
            await self._client.aclose()
            self._client = None
        if self._threaded is not None:
            self._threaded.close()
