"""The webhook bot under gunicorn against a real botsvc, through the botsvc
pytest plugin."""
import os
import socket
import subprocess
import sys
import time
from pathlib import Path

import pytest
from webhook_bot import GREETING

SECRET = "example-secret-token-123"


def free_port() -> int:
    with socket.socket() as sock:
        sock.bind(("127.0.0.1", 0))
        return sock.getsockname()[1]


def listening(port) -> bool:
    with socket.socket() as sock:
        return sock.connect_ex(("127.0.0.1", port)) == 0


def gunicorn(botsvc_bot, port):
    """The bot as it runs in production: gunicorn serving webhook_bot:app()."""
    env = {**os.environ, "BOTSVC_BASE_URL": botsvc_bot.base_url,
           "BOTSVC_BOT_TOKEN": botsvc_bot.token, "BOT_SECRET": SECRET}
    process = subprocess.Popen([sys.executable, "-m", "gunicorn", "-b", f"127.0.0.1:{port}",
                                "webhook_bot:app()"], cwd=Path(__file__).parent, env=env)
    wait_until(lambda: listening(port))
    return process


@pytest.fixture
def webhook_bot(botsvc_bot):
    port = free_port()
    process = gunicorn(botsvc_bot, port)
    botsvc_bot.api.set_webhook(f"http://127.0.0.1:{port}/", SECRET)
    yield process, port
    process.terminate()
    process.wait()


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
    process, port = webhook_bot
    process.terminate()                                  # the bot goes down
    process.wait()
    botsvc_user.start()
    wait_until(lambda: botsvc.webhook_deliveries(botsvc_bot))
    [failed] = botsvc.webhook_deliveries(botsvc_bot)
    assert failed["attempt"] == 1 and "http_status" not in failed

    restarted = gunicorn(botsvc_bot, port)               # ... and comes back
    try:
        botsvc.advance_clock(600)                        # no need to wait for the retry
        botsvc_user.wait_for_message(GREETING)
        # The bot answers the delivery after it greets; the record follows.
        wait_until(lambda: "http_status" in botsvc.webhook_deliveries(botsvc_bot)[0])
        latest = botsvc.webhook_deliveries(botsvc_bot)[0]
        assert latest["http_status"] == 200 and latest["attempt"] >= 2
    finally:
        restarted.terminate()
        restarted.wait()
