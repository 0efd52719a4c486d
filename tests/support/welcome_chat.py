"""One conversation with a welcome bot run as its own process (the suite's
Python process bot, or the any-language page's Node bot: both greet with a
card, echo "You said: ...", and answer the card's click), exported as a
pytest module. The bot-command and any-language tests export the same chat
from the same script."""
from __future__ import annotations

from pathlib import Path

from botsvc.testkit.bot_process import BotProcess
from botsvc.testkit.harness import Botsvc


def export_welcome_chat(server, argv: list[str], output_path: Path) -> str:
    """The chat with the bot ``argv`` starts, exported as a pytest module."""
    botsvc = Botsvc(server.base_url, server.admin_token)
    bot = botsvc.new_bot("welcome_bot")
    process = BotProcess(argv, base_url=bot.base_url, token=bot.token,
                         output_path=output_path).start()
    try:
        user = botsvc.new_user(bot)
        user.start()
        welcome = user.wait_for_message("Welcome")
        user.say("hello")
        user.wait_for_message("You said: hello")
        user.click(welcome, "yes")
        botsvc.wait_for_call(bot, "answerCallbackQuery")
    finally:
        process.stop()
    return botsvc.operator.call("exportChat", user_id=user.user_id, bot_id=bot.id)["content"]
