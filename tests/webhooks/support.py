"""The webhook tests' names and readings (the receivers themselves are in
``botsvc.devkit.receivers``: the benchmarks use them too)."""
from __future__ import annotations

import json
import sqlite3

# A name outside the special-use suffixes, so setWebhook's name rules accept
# it; the substituted resolver maps it to 127.0.0.1.
HOST = "hooks.botsvc-ci.net"
SECRET = "Secret_token-0123456789"
PUBLIC = "93.184.216.34"


def received_ids(receiver) -> list[int]:
    return [json.loads(r["body"])["update_id"] for r in receiver.requests]


def next_attempt_at(app, bot_id) -> float:
    with sqlite3.connect(app.config["SETTINGS"].db_path) as conn:
        return conn.execute("SELECT next_attempt_at FROM webhooks WHERE bot_id = ?",
                            (bot_id,)).fetchone()[0]
