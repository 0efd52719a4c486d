"""An operator command on a running server: ``POST {BOTSVC_URL}/manage/v1/<method>``
with the admin token, its arguments as the same form fields (a file as a
multipart part), so the server's catalogue and schemas decide, as they do
for the data dir. Its answer is printed as a local call's would be: the
result, or the envelope of a failure on stderr and exit status 1. What is
not an answer of botsvc's operator API (nothing listens, another program
answers) is one line naming the address."""
from __future__ import annotations

import contextlib
import json
import os
import sys

import click
import requests

from botsvc.cli.base import say
from botsvc.config import Settings

# Connecting is quick or never; an upload is scanned and converted before
# userSendMedia answers (BOTSVC_MEDIA_TOOL_TIMEOUT is up to 600 s by default).
TIMEOUT = (10, 900)


def call_server(settings: Settings, method: str, given: dict[str, str],
                file_parameters: set[str]):
    """The result of ``method`` on the server at ``settings.url``; exits 1
    with the API's envelope, or with one line, on failure."""
    url = settings.url
    if settings.admin_token is None:
        raise SystemExit(f"botsvc: acting on {url} needs the admin token: set"
                         " BOTSVC_ADMIN_TOKEN to the server's")
    say(f"using the server at {url}")
    with contextlib.ExitStack() as stack:
        files = {name: (os.path.basename(given[name]),
                        stack.enter_context(open(given.pop(name), "rb")))
                 for name in file_parameters}
        try:
            answer = requests.post(f"{url}/manage/v1/{method}", data=given, files=files or None,
                                   headers={"Authorization": f"Bearer {settings.admin_token}"},
                                   timeout=TIMEOUT, allow_redirects=False)
        except requests.RequestException as error:
            raise SystemExit(f"botsvc: cannot reach {url}: {unreachable_reason(error)}") from None
    try:
        body = answer.json()
        ok = body["ok"]
    except (ValueError, TypeError, KeyError):
        raise SystemExit(f"botsvc: {url} answered {answer.status_code} {answer.reason}, which"
                         " is not botsvc's operator API (is it the server's address?)") from None
    if not ok:
        click.echo(json.dumps(body, ensure_ascii=False), err=True)
        sys.exit(1)
    return body["result"]


def unreachable_reason(error: requests.RequestException) -> str:
    """A few words for the operator (requests' own text nests urllib3's)."""
    if isinstance(error, requests.Timeout):
        return "no answer in time"
    if isinstance(error, requests.ConnectionError):
        refused = "Connection refused" in str(error)
        return ("connection refused: is the server running there?" if refused
                else "no connection could be made: is the address right?")
    return type(error).__name__
