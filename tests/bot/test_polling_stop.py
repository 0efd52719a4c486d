"""A stop in the middle of a handler loses no update: the handler in hand
finishes and its update is acknowledged; what came after is left for the
next run. Once with ``stop()`` from another thread, once with SIGTERM to a
bot process started as a user would start it (``run_polling``)."""
from __future__ import annotations

import signal
import subprocess
import sys
import textwrap
import threading

from botsvc.bot import Bot
from tests.support.sdk_bot import SUITE_PACE, polling, wait_until


def handled_by(user) -> list[str]:
    return [m["text"] for m in user.messages_from_bot()]


def test_stop_during_a_handler_finishes_it_and_keeps_the_rest(botsvc_bot, botsvc_user):
    entered, release = threading.Event(), threading.Event()
    bot = Bot()

    @bot.text()
    def slow(ctx):
        entered.set()
        release.wait(10)
        ctx.reply(f"handled {ctx.text}")

    runner = bot.polling(botsvc_bot.base_url, botsvc_bot.token, pause=SUITE_PACE)
    thread = runner.start_in_thread()
    botsvc_user.start()
    botsvc_user.say("one")
    assert entered.wait(10)
    runner.stop()                      # in the middle of "one"
    botsvc_user.say("two")
    release.set()
    thread.join(10)
    assert not thread.is_alive() and runner.failure is None
    assert handled_by(botsvc_user) == ["handled one"]

    with polling(bot, botsvc_bot):     # the next run: "two", and "one" not again
        botsvc_user.wait_for_message("handled two")
    assert handled_by(botsvc_user) == ["handled one", "handled two"]


BOT_PROCESS = textwrap.dedent('''
    import pathlib, sys, time
    from botsvc.bot import Bot

    base_url, token, folder = sys.argv[1], sys.argv[2], pathlib.Path(sys.argv[3])
    bot = Bot()

    @bot.text()
    def slow(ctx):
        (folder / "entered").write_text(ctx.text)
        while not (folder / "go").exists():
            time.sleep(0.01)
        ctx.reply(f"handled {ctx.text}")

    bot.run_polling(base_url, token)
    (folder / "stopped").write_text("cleanly")
''')


def test_sigterm_during_a_handler_stops_gracefully(botsvc_bot, botsvc_user, tmp_path):
    script = tmp_path / "slow_bot.py"
    script.write_text(BOT_PROCESS)
    process = subprocess.Popen([sys.executable, str(script), botsvc_bot.base_url,
                                botsvc_bot.token, str(tmp_path)])
    try:
        botsvc_user.start()
        botsvc_user.say("one")
        wait_until(lambda: (tmp_path / "entered").exists(), timeout=20)
        process.send_signal(signal.SIGTERM)
        botsvc_user.say("two")
        (tmp_path / "go").write_text("")
        assert process.wait(timeout=30) == 0
    finally:
        process.kill()
    assert (tmp_path / "stopped").read_text() == "cleanly"
    assert handled_by(botsvc_user) == ["handled one"]

    bot = Bot()
    bot.text()(lambda ctx: ctx.reply(f"handled {ctx.text}"))
    with polling(bot, botsvc_bot):
        botsvc_user.wait_for_message("handled two")
    assert handled_by(botsvc_user) == ["handled one", "handled two"]


def test_polling_ends_on_a_failure_it_cannot_ride_out(botsvc_bot):
    """WEBHOOK_ACTIVE (409): polling cannot go on, so the loop ends with it."""
    botsvc_bot.api.set_webhook("http://127.0.0.1:9/hook", "sdk-webhook-secret-0123")
    runner = Bot().polling(botsvc_bot.base_url, botsvc_bot.token, pause=SUITE_PACE)
    thread = runner.start_in_thread()
    thread.join(30)
    assert not thread.is_alive()
    assert (runner.failure.error_code, runner.failure.http_status) == ("WEBHOOK_ACTIVE", 409)
