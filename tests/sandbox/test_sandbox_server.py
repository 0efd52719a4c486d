"""The sandbox's session and sign-in throttle across the real server's worker
processes (scripts/server, 2 gunicorn workers): every request on a new
connection, so both workers answer some of them."""
from __future__ import annotations

import re
import time

import pytest
import requests

from botsvc.devkit.servers import running_server
from botsvc.domain import signin_throttle as throttle

pytestmark = pytest.mark.server
FORM_TOKEN = re.compile(r'name="csrf_token" value="([^"]+)"')


def attempt(base: str, token: str) -> requests.Response:
    with requests.Session() as browser:
        form = browser.get(f"{base}/sandbox/signin", headers={"Connection": "close"}, timeout=10)
        return browser.post(f"{base}/sandbox/signin", allow_redirects=False, timeout=10,
                            headers={"Connection": "close"},
                            data={"csrf_token": FORM_TOKEN.search(form.text).group(1),
                                  "token": token})


def test_throttle_and_sessions_hold_across_workers(tmp_path):
    with running_server(tmp_path) as server:
        base = server.base_url
        for _ in range(throttle.FREE_FAILURES + 1):
            assert attempt(base, "wrong").status_code == 401
        refused = attempt(base, server.admin_token)
        assert refused.status_code == 429 and refused.headers["Retry-After"] in ("1", "2")
        deadline = time.monotonic() + 10
        while (signed_in := attempt(base, server.admin_token)).status_code == 429:
            assert time.monotonic() < deadline
            time.sleep(0.2)
        assert signed_in.status_code == 303
        cookie = signed_in.cookies["botsvc_sandbox"]
        for _ in range(12):
            page = requests.get(f"{base}/sandbox/chats", cookies={"botsvc_sandbox": cookie},
                                headers={"Connection": "close"}, allow_redirects=False,
                                timeout=10)
            assert page.status_code == 200
