"""A small example bot for the export's round trip: Start with a parameter
is welcomed with two buttons, a click is answered with an edit and a
callback answer, a text is echoed, a photo is thanked for, and "forget"
deletes the bot's last message. ``echo`` says how a text is echoed, and
``clicks=False`` leaves the buttons dead (the round trip changes them to see
the exported test fail)."""
import threading

import requests

KEYBOARD = {"inline_keyboard": [[{"text": "Yes", "callback_data": "yes"},
                                 {"text": "No", "callback_data": "no"}]]}


class PromoBot:
    def __init__(self, base_url: str, token: str, echo: str = "You said: {}",
                 clicks: bool = True):
        self.api, self.echo, self.offset, self.last_sent = f"{base_url}/v2", echo, 0, None
        self.clicks = clicks   # False: the buttons do nothing
        self.session = requests.Session()
        self.session.headers["Authorization"] = f"Bearer {token}"

    def call(self, method: str, **params):
        body = self.session.post(f"{self.api}/{method}", json=params, timeout=30).json()
        if not body["ok"]:
            raise RuntimeError(f"{method}: {body['error_code']}")
        return body["result"]

    def send(self, chat_id: str, text: str, **extra) -> None:
        self.last_sent = self.call("sendMessage", chat_id=chat_id, text=text, **extra)

    def handle(self, update: dict) -> None:
        if "callback_query" in update and self.clicks:
            query = update["callback_query"]
            self.call("editMessageText", chat_id=query["chat_id"], message_id=query["message_id"],
                      text=f"You picked {query['data']}")
            self.call("answerCallbackQuery", callback_query_id=query["id"], text="Saved")
            return
        message = update.get("message")
        if not message:
            return
        chat_id, text = message["chat"]["id"], message.get("text", "")
        if text.startswith("/start"):
            parameter = (update.get("membership") or {}).get("start_parameter", "none")
            self.send(chat_id, f"Welcome ({parameter})", reply_markup=KEYBOARD)
        elif message["type"] == "photo":
            self.send(chat_id, "Nice photo")
        elif text == "forget" and self.last_sent:
            self.call("deleteMessage", chat_id=chat_id, message_id=self.last_sent["message_id"])
            self.last_sent = None
        elif text:
            self.send(chat_id, self.echo.format(text))

    def run(self, stop: threading.Event) -> None:
        while not stop.is_set():
            for update in self.call("getUpdates", offset=self.offset):
                self.handle(update)
                self.offset = update["update_id"] + 1
            stop.wait(0.05)
