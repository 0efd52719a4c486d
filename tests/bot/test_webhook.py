"""The webhook app over real HTTP (a WSGI server in a thread): the secret
checked before anything else, the handlers run, an update delivered twice
handled once; and botsvc delivering to it after ``set_webhook()``."""
from __future__ import annotations

import threading
from collections.abc import Iterator
from contextlib import contextmanager
from wsgiref.simple_server import WSGIRequestHandler, make_server

import pytest
import requests

from botsvc.bot import Bot, WebhookApp
from tests.support.sdk_bot import wait_until

SECRET = "sdk-webhook-secret-0123"


class Quiet(WSGIRequestHandler):
    def log_message(self, *args):
        pass


@contextmanager
def serving(app: WebhookApp) -> Iterator[str]:
    server = make_server("127.0.0.1", 0, app, handler_class=Quiet)
    thread = threading.Thread(target=server.serve_forever, daemon=True)
    thread.start()
    try:
        yield f"http://127.0.0.1:{server.server_port}/hook"
    finally:
        server.shutdown()
        server.server_close()


def recording_bot(seen: list) -> Bot:
    bot = Bot()
    bot.text()(lambda ctx: seen.append(ctx.text))
    return bot


UPDATE = {"update_id": 7, "message": {"message_id": 3, "date": 0, "type": "text",
                                      "from_bot": False, "text": "hello",
                                      "chat": {"id": "vc_" + "1" * 40, "type": "private"}}}


@pytest.mark.parametrize("header", [None, "", SECRET[:-1], SECRET + "x", SECRET.upper()])
def test_a_wrong_secret_is_refused_and_nothing_runs(botsvc_bot, header):
    seen: list[str] = []
    app = recording_bot(seen).webhook_app(botsvc_bot.base_url, botsvc_bot.token, SECRET)
    headers = {} if header is None else {"X-Platform-Bot-Secret-Token": header}
    with serving(app) as url:
        answer = requests.post(url, json=UPDATE, headers=headers, timeout=10)
    assert (answer.status_code, answer.content, seen) == (401, b"", [])


def test_the_right_secret_is_accepted_once_per_update(botsvc_bot):
    seen: list[str] = []
    app = recording_bot(seen).webhook_app(botsvc_bot.base_url, botsvc_bot.token, SECRET)
    headers = {"X-Platform-Bot-Secret-Token": SECRET}
    with serving(app) as url:
        first = requests.post(url, json=UPDATE, headers=headers, timeout=10)
        again = requests.post(url, json=UPDATE, headers=headers, timeout=10)   # at least once
        broken = requests.post(url, data=b"{", headers=headers, timeout=10)
        got = requests.get(url, headers=headers, timeout=10)
    assert (first.status_code, again.status_code, seen) == (200, 200, ["hello"])
    assert (broken.status_code, got.status_code) == (400, 405)


def test_botsvc_delivers_to_the_app_it_set_up(botsvc, botsvc_bot, botsvc_user):
    bot = Bot()

    @bot.membership("started")
    def greet(ctx):
        ctx.reply("hello from the webhook",
                  reply_markup={"inline_keyboard": [[{"text": "Ping", "callback_data": "ping"}]]})

    @bot.callback("ping")
    async def pong(ctx):
        await ctx.answer("pong")

    app = bot.webhook_app(botsvc_bot.base_url, botsvc_bot.token, SECRET)
    with serving(app) as url:
        assert app.set_webhook(url) is True
        assert botsvc_bot.api.get_webhook_info()["url"] == url
        botsvc_user.start()
        greeting = botsvc_user.wait_for_message("hello from the webhook")
        botsvc_user.click(greeting, "ping")
        wait_until(lambda: [a["text"] for a in botsvc_user.chat()["callback_answers"]] == ["pong"])
        wait_until(lambda: all("http_status" in d for d in botsvc.webhook_deliveries(botsvc_bot)))
    assert [d["http_status"] for d in botsvc.webhook_deliveries(botsvc_bot)] == [200, 200]
