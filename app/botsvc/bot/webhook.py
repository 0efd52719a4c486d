"""The webhook: a WSGI app that botsvc POSTs each update to, for gunicorn or
any WSGI server (``gunicorn 'mybot:app'``).

- The secret first: a request whose ``X-Platform-Bot-Secret-Token`` is not
  the bot's (compared in constant time) is answered 401 before its body is
  read.
- Then the update goes to its handler, the same handlers polling runs, and
  the answer is 200 once the handler returned: the contract wants a 2xx
  only for an update the bot has accepted, and botsvc waits 10 s for it,
  so a handler with long work should hand it off and return.
- Delivery is at least once: an update_id handled lately (the last
  ``remember`` of this process) is answered 200 again without its handler.
- A handler's exception is logged with the update and answered 200 like
  polling acknowledges it: a retry would fail the same way.

``set_webhook()`` points botsvc at the app (setWebhook with its URL and
secret).
"""
from __future__ import annotations

import asyncio
import hmac
import json
import threading
from collections import OrderedDict
from typing import Any

from botsvc.bot.api import Api, AsyncApi
from botsvc.bot.router import Router
from botsvc.bot.transport import RetryPolicy

SECRET_HEADER = "HTTP_X_PLATFORM_BOT_SECRET_TOKEN"   # X-Platform-Bot-Secret-Token
MAX_BODY = 1 << 20   # an Update is small; a body above this is refused unread


class WebhookApp:
    def __init__(self, bot: Router, base_url: str, token: str, secret_token: str, *,
                 url: str | None = None, policy: RetryPolicy | None = None,
                 remember: int = 10_000):
        self.bot, self.url, self.remember = bot, url, remember
        self._secret = secret_token.encode()
        self.api = Api(base_url, token, policy=policy)
        self._async_api: AsyncApi | None = None
        self._policy, self._base_url, self._token = policy, base_url, token
        self._seen: OrderedDict[int, None] = OrderedDict()
        self._lock = threading.Lock()
        self._loop: asyncio.AbstractEventLoop | None = None

    def set_webhook(self, url: str | None = None, *, drop_pending_updates: bool | None = None):
        """setWebhook: botsvc delivers to ``url`` (or the one given at
        creation) with this app's secret."""
        target = url or self.url
        if not target:
            raise ValueError("give the URL botsvc reaches this app at")
        return self.api.set_webhook(url=target, secret_token=self._secret.decode(),
                                    drop_pending_updates=drop_pending_updates)

    def __call__(self, environ: dict, start_response) -> list[bytes]:
        if environ.get("REQUEST_METHOD") != "POST":
            return _answer(start_response, "405 Method Not Allowed", [("Allow", "POST")])
        given = environ.get(SECRET_HEADER, "").encode("latin-1")
        if not hmac.compare_digest(given, self._secret):
            return _answer(start_response, "401 Unauthorized")
        try:
            update = _read_update(environ)
        except Refused as refused:
            return _answer(start_response, refused.status)
        if not self._already_handled(update["update_id"]):
            self._run(update)
            self._remember(update["update_id"])
        return _answer(start_response, "200 OK")

    def _already_handled(self, update_id: int) -> bool:
        with self._lock:
            return update_id in self._seen

    def _remember(self, update_id: int) -> None:
        with self._lock:
            self._seen[update_id] = None
            while len(self._seen) > self.remember:
                self._seen.popitem(last=False)

    def _run(self, update: dict[str, Any]) -> None:
        """The handler, in this app's event loop (a thread of its own, made
        on the first update): async handlers share it, plain ones run in
        its worker threads."""
        with self._lock:
            if self._loop is None:
                self._loop = asyncio.new_event_loop()
                threading.Thread(target=self._loop.run_forever, name="botsvc-bot-webhook",
                                 daemon=True).start()
                self._async_api = AsyncApi(self._base_url, self._token, policy=self._policy)
        done = asyncio.run_coroutine_threadsafe(
            self.bot.dispatch(update, self.api, self._async_api), self._loop)
        done.result()


class Refused(Exception):
    def __init__(self, status: str):
        super().__init__(status)
        self.status = status


def _read_update(environ: dict) -> dict[str, Any]:
    try:
        length = int(environ.get("CONTENT_LENGTH") or 0)
    except ValueError:
        raise Refused("400 Bad Request") from None
    if length > MAX_BODY:
        raise Refused("413 Content Too Large")
    try:
        update = json.loads(environ["wsgi.input"].read(length))
    except ValueError:
        raise Refused("400 Bad Request") from None
    if not isinstance(update, dict) or not isinstance(update.get("update_id"), int):
        raise Refused("400 Bad Request")
    return update


def _answer(start_response, status: str, headers: list | None = None) -> list[bytes]:
    start_response(status, [("Content-Length", "0"), *(headers or [])])
    return []
