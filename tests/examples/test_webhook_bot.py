"""The webhook bot against a real botsvc, through the botsvc pytest plugin."""
import time

import pytest
from webhook_bot import GREETING, WebhookBot

SECRET = "example-secret-token-123"


@pytest.fixture
def webhook_bot(botsvc_bot):
    bot = WebhookBot(botsvc_bot.base_url, botsvc_bot.token, SECRET)
    bot.start()
    botsvc_bot.api.set_webhook(bot.url, SECRET)
    yield bot
    bot.stop()


def wait_until(condition, timeout=10.0):
    deadline = time.monotonic() + timeout
    while not condition():
        assert time.monotonic() < deadline, "timed out"
        time.sleep(0.05)


def test_it_greets_and_answers_the_button(webhook_bot, botsvc_user):
    botsvc_user.start()
    greeting = botsvc_user.wait_for_message(GREETING)
    botsvc_user.click(greeting, "ping")
    wait_until(lambda: [a["text"] for a in botsvc_user.chat()["callback_answers"]] == ["pong"])


def test_an_update_missed_while_the_bot_was_down_arrives_later(
        botsvc, botsvc_bot, botsvc_user, webhook_bot):
    webhook_bot.stop()                                   # the bot goes down
    botsvc_user.start()
    wait_until(lambda: botsvc.webhook_deliveries(botsvc_bot))
    [failed] = botsvc.webhook_deliveries(botsvc_bot)
    assert failed["attempt"] == 1 and "http_status" not in failed

    restarted = WebhookBot(botsvc_bot.base_url, botsvc_bot.token, SECRET,
                           port=webhook_bot.server.server_address[1])
    restarted.start()                                    # ... and comes back
    try:
        botsvc.advance_clock(600)                        # no need to wait for the retry
        botsvc_user.wait_for_message(GREETING)
        # The bot answers the delivery after it greets; the record follows.
        wait_until(lambda: "http_status" in botsvc.webhook_deliveries(botsvc_bot)[0])
        latest = botsvc.webhook_deliveries(botsvc_bot)[0]
        assert latest["http_status"] == 200 and latest["attempt"] >= 2
    finally:
        restarted.stop()
