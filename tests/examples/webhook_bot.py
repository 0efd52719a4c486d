"""A webhook bot: botsvc POSTs each update to it. It greets a user who
presses Start with a "Ping" button and answers a click on it with "pong".
botsvc.bot's WSGI app accepts only requests carrying its secret token
(compared in constant time) and handles an update delivered twice once.
Serve it with gunicorn (or any WSGI server):
BOTSVC_BASE_URL=... BOTSVC_BOT_TOKEN=... BOT_SECRET=... gunicorn 'webhook_bot:app()'"""
import os

from botsvc.bot import Bot

GREETING = "Hello! Press the button."
bot = Bot()


@bot.membership("started")
def greet(ctx):
    ctx.reply(GREETING, reply_markup={"inline_keyboard": [[{"text": "Ping",
                                                            "callback_data": "ping"}]]})


@bot.callback("ping")
def pong(ctx):
    ctx.answer("pong")


def app():
    return bot.webhook_app(os.environ["BOTSVC_BASE_URL"], os.environ["BOTSVC_BOT_TOKEN"],
                           os.environ["BOT_SECRET"])
