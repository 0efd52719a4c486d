"""Each kind of handler, on a real botsvc (the plugin's server, real HTTP):
a command with its start parameter, text (exact, pattern, any), callback
data (exact, prefix) with answer, edit and delete, membership (started,
stopped, blocked), files, the fallback, async handlers, and a handler that
fails without stopping the bot."""
from __future__ import annotations

import json
import logging

import pytest

from botsvc.bot import Bot
from tests.support.media_files import image_bytes
from tests.support.sdk_bot import polling, wait_until


def texts(user) -> list[str]:
    return [m.get("text") or m.get("caption") for m in user.messages_from_bot()]


def test_a_command_gets_its_start_parameter_and_its_arguments(botsvc_bot, botsvc_user):
    bot = Bot()

    @bot.command("start")
    def start(ctx):
        ctx.reply(f"start {ctx.command} {ctx.args}")

    @bot.command("help", "info")
    def help_(ctx):
        ctx.reply(f"{ctx.command}: {ctx.args}")

    with polling(bot, botsvc_bot):
        botsvc_user.start("promo_1")
        assert botsvc_user.wait_for_message()["text"] == "start start promo_1"
        botsvc_user.say("/help me please")
        assert botsvc_user.wait_for_message()["text"] == "help: me please"
        botsvc_user.say("/info")
        assert botsvc_user.wait_for_message()["text"] == "info: None"


def test_text_exact_then_pattern_then_any_then_the_fallback(botsvc_bot, botsvc_user):
    bot = Bot()

    @bot.text("hi")
    def hello(ctx):
        ctx.reply("hello")

    @bot.text(pattern=r"^order (\d+)$")
    def order(ctx):
        ctx.reply(f"order #{ctx.match[1]}")

    @bot.text()
    def echo(ctx):
        ctx.reply(f"echo {ctx.text}")

    @bot.fallback
    def other(ctx):
        ctx.reply(f"fallback {ctx.text}")

    with polling(bot, botsvc_bot):
        botsvc_user.start()        # /start: a command, no handler for it -> the fallback
        botsvc_user.wait_for_message("fallback /start")
        for said in ("hi", "order 42", "order x", "/nothing"):
            botsvc_user.say(said)
        botsvc_user.wait_for_message("fallback /nothing")
    assert texts(botsvc_user) == ["fallback /start", "hello", "order #42", "echo order x",
                                  "fallback /nothing"]


KEYBOARD = {"inline_keyboard": [[{"text": "Ping", "callback_data": "ping"}],
                                [{"text": "Item 7", "callback_data": "item:7"}],
                                [{"text": "Remove", "callback_data": "remove"}]]}


def test_callbacks_exact_and_by_prefix_answer_edit_and_delete(botsvc, botsvc_bot, botsvc_user):
    bot = Bot()

    @bot.membership("started")
    def menu(ctx):
        ctx.reply("menu", reply_markup=KEYBOARD)

    @bot.callback("ping")
    def ping(ctx):
        ctx.answer("pong")
        ctx.edit("pinged", reply_markup=KEYBOARD)

    @bot.callback(prefix="item:")
    def item(ctx):
        ctx.answer(f"item {ctx.args}", show_alert=True)

    @bot.callback("remove")
    def remove(ctx):
        ctx.answer()
        ctx.delete()

    with polling(bot, botsvc_bot):
        botsvc_user.start()
        menu_message = botsvc_user.wait_for_message("menu")
        botsvc_user.click(menu_message, "ping")
        wait_until(lambda: texts(botsvc_user) == ["pinged"])
        botsvc_user.click(menu_message, "item:7")
        answers = wait_until(lambda: [(a["data"], a["text"], a["show_alert"]) for a in
                                      botsvc_user.chat()["callback_answers"]][1:])
        botsvc_user.click(menu_message, "remove")
        wait_until(lambda: botsvc_user.messages_from_bot() == [])   # deleted
    assert answers == [("item:7", "item 7", True)]
    assert botsvc.wait_for_call(botsvc_bot, "answerCallbackQuery")["params"]["text"] == "pong"


def test_membership_started_stopped_and_blocked(botsvc, botsvc_bot):
    bot = Bot()
    seen: list[tuple[str, str | None]] = []
    for event in ("started", "stopped", "blocked"):
        bot.membership(event)(lambda ctx, event=event: seen.append((event, ctx.args)))

    first, second = botsvc.new_user(botsvc_bot), botsvc.new_user(botsvc_bot)
    with polling(bot, botsvc_bot):
        first.start("from_ad")
        first.stop()
        second.start()
        second.block()
        wait_until(lambda: len(seen) == 4)
    assert seen == [("started", "from_ad"), ("stopped", None), ("started", None),
                    ("blocked", None)]


def test_files_by_type(botsvc_bot, botsvc_user, tmp_path):
    bot = Bot()

    @bot.file("video")
    def video(ctx):
        ctx.reply("a video")

    @bot.file()
    def any_file(ctx):
        ctx.reply(f"a {ctx.message['type']} of kind {ctx.file['kind']}, "
                  f"file_id {len(ctx.file['file_id'])} hex")

    photo = tmp_path / "me.png"
    photo.write_bytes(image_bytes("PNG"))
    with polling(bot, botsvc_bot):
        botsvc_user.start()
        botsvc_user.send_file(photo, caption="look")
        assert botsvc_user.wait_for_message()["text"] == "a photo of kind photo, file_id 48 hex"


@pytest.mark.parametrize("use_httpx", [True, False], ids=["httpx", "threads"])
def test_async_handlers_await_the_same_context(botsvc_bot, botsvc_user, use_httpx):
    bot = Bot()

    @bot.command("start")
    async def start(ctx):
        sent = await ctx.reply("choose", reply_markup=KEYBOARD)
        assert sent["chat"]["id"] == ctx.chat_id

    @bot.callback("ping")
    async def ping(ctx):
        await ctx.answer("pong")
        await ctx.edit("done")

    @bot.text()
    def plain(ctx):        # a plain handler beside async ones: in a worker thread
        ctx.reply(f"plain {ctx.text}")

    with polling(bot, botsvc_bot, use_httpx=use_httpx) as runner:
        assert runner.async_api.transport.uses_httpx is use_httpx
        botsvc_user.start()
        choose = botsvc_user.wait_for_message("choose")
        botsvc_user.click(choose, "ping")
        wait_until(lambda: texts(botsvc_user) == ["done"])
        botsvc_user.say("and this")
        botsvc_user.wait_for_message("plain and this")


def test_a_failing_handler_is_logged_with_its_update_and_the_bot_goes_on(
        botsvc_bot, botsvc_user, caplog):
    bot = Bot()

    @bot.text()
    def fragile(ctx):
        if ctx.text == "boom":
            raise RuntimeError("the handler broke")
        ctx.reply(f"fine: {ctx.text}")

    with caplog.at_level(logging.ERROR, logger="botsvc.bot"), polling(bot, botsvc_bot):
        botsvc_user.start()
        botsvc_user.say("boom")
        botsvc_user.say("next")
        botsvc_user.wait_for_message("fine: next")
    [record] = [r for r in caplog.records if r.name == "botsvc.bot"]
    assert record.exc_info[1].args == ("the handler broke",)
    logged = json.loads(record.getMessage().split(" failed on update ", 1)[1])
    assert logged["message"]["text"] == "boom" and isinstance(logged["update_id"], int)
    assert texts(botsvc_user) == ["fine: next"]     # boom was acknowledged, not retried
