"""The sandbox as a browser sees it, through Flask's test client: a person who
signs in with the admin token and then calls what the pages' scripts call.
Imported by module name (``from sandbox_client import Person``)."""
from __future__ import annotations

import io
import json
import re

from tests.support.contract import ADMIN_TOKEN

FORM_TOKEN = re.compile(r'name="csrf_token" value="([^"]+)"')
PAGE_TOKEN = re.compile(r'<meta name="csrf-token" content="([^"]+)">')


class Person:
    """One browser: its cookies live in the test client."""

    def __init__(self, client):
        self.client = client
        self.csrf: str | None = None

    def sign_in(self, token: str = ADMIN_TOKEN):
        form = self.client.get("/sandbox/signin")
        response = self.client.post("/sandbox/signin", data={
            "csrf_token": FORM_TOKEN.search(form.text).group(1), "token": token})
        if response.status_code == 303:
            self.page("/sandbox/chats")
        return response

    def page(self, path: str):
        response = self.client.get(path)
        found = PAGE_TOKEN.search(response.text) if response.mimetype == "text/html" else None
        if found:
            self.csrf = found.group(1)
        return response

    def call(self, method: str, /, **params):
        return self.client.post(f"/sandbox/api/{method}", json=params,
                                headers={"X-CSRF-Token": self.csrf})

    def ok(self, method: str, /, **params):
        response = self.call(method, **params)
        assert response.status_code == 200, response.get_json()
        return response.get_json()["result"]

    def upload(self, data: bytes, name: str, **params):
        form = {"file": (io.BytesIO(data), name, "application/octet-stream"),
                **{k: v if isinstance(v, str) else json.dumps(v) for k, v in params.items()}}
        return self.client.post("/sandbox/api/userSendMedia", data=form,
                                content_type="multipart/form-data",
                                headers={"X-CSRF-Token": self.csrf})

    def state(self, user_id: int, bot_id: int, since: str | None = None) -> dict:
        query = "" if since is None else f"?since={since}"
        response = self.client.get(f"/sandbox/chats/{user_id}/{bot_id}/state{query}")
        assert response.status_code == 200, response.get_json()
        return response.get_json()["result"]
