"""Importing the SDK loads none of the server: a bot process stays light.
Checked in a fresh interpreter, through sys.modules, for everything the SDK
has (the async transport with httpx included)."""
from __future__ import annotations

import json
import subprocess
import sys

SERVER = ("flask", "werkzeug", "gunicorn", "marshmallow", "apscheduler", "sqlite3", "_sqlite3",
          "apispec", "PIL", "magic", "pikepdf", "prometheus_client")


def test_importing_the_sdk_loads_no_module_of_the_server():
    probe = ("import json, sys\n"
             "import botsvc.bot, botsvc.bot.aio, botsvc.bot.methods\n"
             "from botsvc.bot import Api, AsyncApi, Bot, Polling, WebhookApp\n"
             "print(json.dumps(sorted(sys.modules)))\n")
    done = subprocess.run([sys.executable, "-c", probe], capture_output=True, text=True,
                          check=True, timeout=60)
    loaded = json.loads(done.stdout)
    ours = sorted(m for m in loaded if m.startswith("botsvc"))
    assert ours == ["botsvc", "botsvc.bot", "botsvc.bot.aio", "botsvc.bot.api",
                    "botsvc.bot.context", "botsvc.bot.errors", "botsvc.bot.methods",
                    "botsvc.bot.router", "botsvc.bot.runner", "botsvc.bot.transport",
                    "botsvc.bot.webhook"]
    assert not [m for m in loaded if m.split(".")[0] in SERVER]
    assert "requests" in loaded and "httpx" in loaded   # its own clients, and only them
