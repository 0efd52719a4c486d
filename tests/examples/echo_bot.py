"""A tiny echo bot: it polls botsvc for updates and answers every text
message with the same text. It waits out RATE_LIMITED (Retry-After) and
retries server failures under the same Idempotency-Key, so a retried send is
never sent twice."""
import threading
import time

import requests


class EchoBot:
    def __init__(self, base_url: str, token: str):
        self.api = f"{base_url}/v2"
        self.session = requests.Session()
        self.session.headers["Authorization"] = f"Bearer {token}"
        self.offset = 0

    def call(self, method: str, idempotency_key: str | None = None, **params):
        headers = {"Idempotency-Key": idempotency_key} if idempotency_key else {}
        for attempt in range(10):
            response = self.session.post(f"{self.api}/{method}", json=params,
                                         headers=headers, timeout=30)
            if response.status_code == 429:
                time.sleep(int(response.headers["Retry-After"]))
            elif response.status_code >= 500:
                time.sleep(min(0.1 * 2 ** attempt, 5))
            else:
                body = response.json()
                if not body["ok"]:
                    raise RuntimeError(f"{method}: {body['error_code']}")
                return body["result"]
        raise RuntimeError(f"{method}: still failing after 10 attempts")

    def poll_once(self) -> None:
        for update in self.call("getUpdates", offset=self.offset):
            message = update.get("message")
            if message and "text" in message and not message["text"].startswith("/"):
                self.call("sendMessage", idempotency_key=f"echo-{update['update_id']}",
                          chat_id=message["chat"]["id"], text=message["text"])
            self.offset = update["update_id"] + 1   # accepted: acknowledge it

    def run(self, stop: threading.Event) -> None:
        while not stop.is_set():
            self.poll_once()
            stop.wait(0.1)
