"""An example bot for the export's hostile round trip: whatever a user says
comes back exactly, with a button whose label and callback_data are the
text; a click edits that message to the button's data and answers with it;
a photo's caption comes back; "long" is answered with the contract's
longest message (16,384 bytes of text, the largest keyboard); /start with a
card of hostile fields."""
import threading

import requests

from tests.export.hostile import CORPUS

LONG_TEXT = ("é€\0\u2028'\"\\" * 4096)[:16384 // 2]   # 2-byte and 3-byte characters mixed
while len(LONG_TEXT.encode()) > 16384:
    LONG_TEXT = LONG_TEXT[:-1]
LARGEST_KEYBOARD = {"inline_keyboard": [
    [{"text": f"{r}{c}" + "é" * 60, "callback_data": f"{r}.{c}" + "x" * 250} for c in range(8)]
    for r in range(10)]}
CARD = {"type": "info", "title": CORPUS[0], "text": CORPUS[9],
        "fields": [{"label": t[:100] or "x", "value": t} for t in CORPUS[1:12]]}


def keyboard(text: str) -> dict:
    return {"inline_keyboard": [[{"text": text[:40] or "x", "callback_data": text[:60] or "x"}]]}


class HostileBot:
    def __init__(self, base_url: str, token: str):
        self.api, self.offset = f"{base_url}/v2", 0
        self.session = requests.Session()
        self.session.headers["Authorization"] = f"Bearer {token}"

    def call(self, method: str, **params):
        body = self.session.post(f"{self.api}/{method}", json=params, timeout=30).json()
        if not body["ok"]:
            raise RuntimeError(f"{method}: {body['error_code']}: {body['description']}")
        return body["result"]

    def handle(self, update: dict) -> None:
        if "callback_query" in update:
            query = update["callback_query"]
            self.call("editMessageText", chat_id=query["chat_id"], message_id=query["message_id"],
                      text=query["data"])
            self.call("answerCallbackQuery", callback_query_id=query["id"], text=query["data"])
            return
        message = update.get("message")
        if not message:
            return
        chat_id, text = message["chat"]["id"], message.get("text")
        if text == "/start":
            self.call("sendCard", chat_id=chat_id, card=CARD)
        elif message["type"] == "photo":
            self.call("sendMessage", chat_id=chat_id, text=message.get("caption") or "a photo")
        elif text == "long":
            self.call("sendMessage", chat_id=chat_id, text=LONG_TEXT,
                      reply_markup=LARGEST_KEYBOARD)
        elif text:
            self.call("sendMessage", chat_id=chat_id, text=text, reply_markup=keyboard(text))

    def run(self, stop: threading.Event) -> None:
        while not stop.is_set():
            for update in self.call("getUpdates", offset=self.offset):
                self.handle(update)
                self.offset = update["update_id"] + 1
            stop.wait(0.05)
