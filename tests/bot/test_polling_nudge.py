"""``Polling.nudge()``: an update on its way ends the pause in hand, and the
plugin nudges the SDK bot it runs each time the test's user acts, so that a
suite never waits on the bot's idle pause. The bot here pauses 30 s after
an empty poll: only a nudge can bring its answer within the wait's 10 s."""
from __future__ import annotations

import textwrap

from botsvc.bot import Bot, Pause
from tests.support.sdk_bot import polling, wait_until

LONG_PAUSE = Pause(first=30, growth=1, longest=30)


def empty_polls(botsvc, bot) -> int:
    return botsvc.operator.call("getBotCalls", bot_id=bot.id)["empty_polls"]


def test_a_nudge_ends_the_pause_in_hand(botsvc, botsvc_bot, botsvc_user):
    bot = Bot()

    @bot.text()
    def echo(ctx):
        ctx.reply(ctx.text)

    botsvc_user.start()
    with polling(bot, botsvc_bot, pause=LONG_PAUSE) as runner:
        wait_until(lambda: empty_polls(botsvc, botsvc_bot) >= 1)   # pausing now, for 30 s
        botsvc_user.say("hello")
        runner.nudge()
        assert botsvc_user.wait_for_message("hello", timeout=10)["text"] == "hello"


BOT_MODULE = textwrap.dedent('''
    from botsvc.bot import Bot, Pause, Polling

    Polling.default_pause = Pause(first=30, growth=1, longest=30)   # after the plugin's
    bot = Bot()


    @bot.text()
    def echo(ctx):
        ctx.reply(ctx.text)
''')

SUITE = textwrap.dedent('''
    import time

    def test_each_action_nudges_the_bot(bot_under_test, botsvc, botsvc_bot, botsvc_user):
        botsvc_user.start()
        deadline = time.monotonic() + 10
        while botsvc.operator.call("getBotCalls", bot_id=botsvc_bot.id)["empty_polls"] < 2:
            assert time.monotonic() < deadline
            time.sleep(0.01)
        botsvc_user.say("hello")
        assert botsvc_user.wait_for_message("hello", timeout=10)["text"] == "hello"
''')


def test_the_plugin_nudges_its_bot_when_the_user_acts(pytester, botsvc, monkeypatch):
    monkeypatch.setenv("BOTSVC_URL", botsvc.base_url)    # this session's server
    monkeypatch.setenv("BOTSVC_ADMIN_TOKEN", botsvc.admin_token)
    pytester.makepyfile(echo_nudged_bot=BOT_MODULE, test_nudged=SUITE)
    pytester.makeini("[pytest]\nbotsvc_bot_object = echo_nudged_bot:bot\n")
    # A process of its own: the bot module sets the SDK's default pause.
    pytester.runpytest_subprocess("-p", "no:cacheprovider").assert_outcomes(passed=1)
