"""The bot's pulse: what a developer looks at to see whether their bot is
alive and what it did. ``GET bots/<bot>/pulse`` answers, for the bot:

- ``calls``: its newest calls from the call log (getBotCalls), newer than
  ``after_call`` when given, filtered by ``method`` and ``failures_only`` as
  getBotCalls filters; with ``empty_polls`` and ``last_poll_at``, and
  ``recent_polls``: the recorded getUpdates calls of the last minute (the
  page adds the empty polls it sees counted meanwhile: the polling rate);
- ``mode`` (``webhook`` or ``polling``), ``webhook`` (getWebhookInfo's
  fields: url, pending_update_count, the last error and success), the
  newest webhook delivery attempts (getWebhookDeliveries) and
  ``failing_since``: the first of the failed attempts since the last one
  that succeeded (null while the last attempt succeeded);
- ``faults``: the faults armed for it, when the testing tools are on;
- ``clock``: the service's clock (getClock).

Everything through the operator methods and the domain functions the API
and the CLI use. Asked every second by the page: the access line is at DEBUG.
"""
from __future__ import annotations

from flask import Response, request

from botsvc import clock, logs
from botsvc.db import get_db
from botsvc.domain import bots, faults, webhooks
from botsvc.errors import invalid
from botsvc.sandbox import bp, calls, json_ok, settings

CALLS_SHOWN = 50
DELIVERIES_SHOWN = 20
# getUpdates records read to count the recorded polls of the last minute.
RECENT_POLLS_COUNTED = 100


def failing_since(deliveries: list[dict]) -> int | None:
    """When the current run of failed attempts began: the oldest failure
    newer than the newest success (deliveries are newest first)."""
    since = None
    for attempt in deliveries:
        if _succeeded(attempt):
            break
        since = attempt["started_at"]
    return since


def _succeeded(attempt: dict) -> bool:
    return "error" not in attempt and 200 <= attempt.get("http_status", 0) < 300


def _call_filters() -> dict:
    params: dict = {}
    method = request.args.get("method")
    if method:
        params["method"] = method
    failures_only = request.args.get("failures_only")
    if failures_only not in (None, "", "0", "1"):
        raise invalid("failures_only", "failures_only must be 0 or 1")
    if failures_only == "1":
        params["failures_only"] = True
    return params


def _after_call() -> int:
    value = request.args.get("after_call", "0")
    if not value.isdigit() or len(value) > 18:
        raise invalid("after_call", "after_call must be a call_id, or 0")
    return int(value)


@bp.route("/bots/<int:bot_id>/pulse")
def bot_pulse(bot_id: int) -> Response:
    logs.quiet_access_line()
    conn = get_db()
    bot = bots.require_bot(conn, bot_id)
    after_call = _after_call()
    log = calls.run("getBotCalls", {"bot_id": bot_id, "limit": CALLS_SHOWN, **_call_filters()})
    polls = calls.run("getBotCalls", {"bot_id": bot_id, "method": "getUpdates",
                                      "limit": RECENT_POLLS_COUNTED})["calls"]
    now = clock.time()
    info = webhooks.webhook_info(conn, bot_id, now)
    deliveries = calls.run("getWebhookDeliveries", {"bot_id": bot_id,
                                                    "limit": DELIVERIES_SHOWN})["deliveries"]
    return json_ok({
        "bot": {"id": bot["id"], "username": bot["username"],
                "display_name": bot["display_name"], "disabled": bool(bot["disabled"])},
        "calls": [c for c in log["calls"] if c["call_id"] > after_call],
        "empty_polls": log["empty_polls"], "last_poll_at": log["last_poll_at"],
        "recent_polls": sum(1 for c in polls if c["date"] >= now - 60),
        "mode": "webhook" if info["url"] else "polling",
        "webhook": info,
        "deliveries": deliveries,
        "failing_since": failing_since(deliveries),
        "faults": faults.armed(conn, bot_id) if settings().test_tools else None,
        "clock": calls.run("getClock", {}),
    })
