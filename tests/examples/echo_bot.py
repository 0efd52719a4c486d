"""A tiny echo bot: it answers every text message with the same text.
botsvc.bot polls for it, acknowledges each update once its handler
returned, waits out RATE_LIMITED (Retry-After) and retries server failures
under the same Idempotency-Key, so a retried send is never sent twice.
Run it with: BOTSVC_BASE_URL=http://127.0.0.1:8080 BOTSVC_BOT_TOKEN=... python echo_bot.py"""
import os

from botsvc.bot import Bot

bot = Bot()


@bot.text()
def echo(ctx):
    ctx.reply(ctx.text)


if __name__ == "__main__":
    bot.run_polling(os.environ["BOTSVC_BASE_URL"], os.environ["BOTSVC_BOT_TOKEN"])   # until Ctrl-C
