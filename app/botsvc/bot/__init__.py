"""botsvc's bot SDK: write a bot for botsvc in a few lines.

    from botsvc.bot import Bot

    bot = Bot()

    @bot.text()
    def echo(ctx):
        ctx.reply(ctx.text)

    bot.run_polling("http://127.0.0.1:8080", token)

It imports nothing of the server (no Flask, no gunicorn, no SQLite code of
botsvc's): only requests, and httpx when the ``bot-async`` extra is
installed. The guide: docs/bot-sdk.md.
"""
from __future__ import annotations

from typing import Any

from botsvc.bot.api import Api, AsyncApi
from botsvc.bot.context import Context
from botsvc.bot.errors import BotError
from botsvc.bot.router import Router
from botsvc.bot.runner import Pause, Polling
from botsvc.bot.transport import RetryPolicy
from botsvc.bot.webhook import WebhookApp

__all__ = ["Api", "AsyncApi", "Bot", "BotError", "Context", "Pause", "Polling", "RetryPolicy",
           "Router", "WebhookApp"]


class Bot(Router):
    """A bot's handlers (``command``, ``text``, ``callback``, ``membership``,
    ``file``, ``fallback``) and the two ways in: polling and a webhook."""

    def polling(self, base_url: str, token: str, **options: Any) -> Polling:
        """The polling loop, not started (``pause=``, ``policy=``, ``limit=``)."""
        return Polling(self, base_url, token, **options)

    def run_polling(self, base_url: str, token: str, **options: Any) -> None:
        """Poll until SIGTERM or SIGINT, then stop gracefully."""
        self.polling(base_url, token, **options).run_until_signal()

    def webhook_app(self, base_url: str, token: str, secret_token: str,
                    **options: Any) -> WebhookApp:
        """The WSGI app for a webhook (``url=``: where botsvc reaches it, for
        ``set_webhook()``)."""
        return WebhookApp(self, base_url, token, secret_token, **options)
