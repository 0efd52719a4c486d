"""A webhook bot: botsvc POSTs each update to it. It greets a user who
presses Start with a "Ping" button and answers a click on it with "pong".
Only requests carrying its secret token are accepted, and an update
delivered twice (delivery is at least once) is handled once."""
import hmac
import json
import threading
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer

import requests

GREETING = "Hello! Press the button."


class WebhookBot:
    def __init__(self, base_url: str, token: str, secret_token: str, port: int = 0):
        self.api = f"{base_url}/v2"
        self.session = requests.Session()
        self.session.headers["Authorization"] = f"Bearer {token}"
        self.secret_token = secret_token
        self.seen: set[int] = set()
        self.lock = threading.Lock()
        self.server = ThreadingHTTPServer(("127.0.0.1", port), self._handler_class())

    @property
    def url(self) -> str:
        host, port = self.server.server_address
        return f"http://{host}:{port}/hook"

    def call(self, method: str, **params):
        body = self.session.post(f"{self.api}/{method}", json=params, timeout=30).json()
        if not body["ok"]:
            raise RuntimeError(f"{method}: {body['error_code']}")
        return body["result"]

    def handle(self, update: dict) -> None:
        with self.lock:
            if update["update_id"] in self.seen:
                return
            self.seen.add(update["update_id"])
        if "membership" in update and update["membership"]["status"] == "active":
            self.call("sendMessage", chat_id=update["membership"]["chat_id"], text=GREETING,
                      reply_markup={"inline_keyboard": [[{"text": "Ping",
                                                          "callback_data": "ping"}]]})
        elif "callback_query" in update:
            self.call("answerCallbackQuery", callback_query_id=update["callback_query"]["id"],
                      text="pong")

    def _handler_class(self):
        bot = self

        class Handler(BaseHTTPRequestHandler):
            def do_POST(self):
                given = self.headers.get("X-Platform-Bot-Secret-Token", "")
                if not hmac.compare_digest(given.encode(), bot.secret_token.encode()):
                    self.send_response(401)
                else:
                    length = int(self.headers.get("Content-Length", "0"))
                    bot.handle(json.loads(self.rfile.read(length)))
                    self.send_response(200)   # only after the update was handled
                self.send_header("Content-Length", "0")
                self.end_headers()

            def log_message(self, *args):
                pass

        return Handler

    def start(self) -> None:
        threading.Thread(target=self.server.serve_forever, daemon=True).start()

    def stop(self) -> None:
        self.server.shutdown()
        self.server.server_close()
