"""The bot's pulse: what a developer looks at to see whether their bot is
alive and what it did. ``GET bots/<bot>/pulse`` answers, for the bot:

- ``calls``: its calls from the call log (getBotCalls), newest first: every
  kept one newer than ``after_call`` (getBotCalls' pages read back to it, so
  a burst leaves no gap; at most the 1,000 the log keeps), or the newest 50
  on a first read, with ``older_cursor``: getBotCalls' cursor to the ones
  before them (null when there are none), which the page pages with through
  getBotCalls itself. Filtered as getBotCalls filters: the query's filters
  are handed to its schema, which judges them (``_call_filters``), with
  getBotCalls' ``detail`` where it has it; with ``empty_polls`` and
  ``last_poll_at``, and ``recent_polls``: the recorded getUpdates calls of
  the last 10 s (the page adds the empty polls it sees counted meanwhile:
  the polling rate);
- ``mode`` (``webhook`` or ``polling``), ``webhook`` (getWebhookInfo's
  fields: url (a token and the query's values redacted), pending_update_count, the last error and success), the
  newest webhook delivery attempts (getWebhookDeliveries) and
  ``failing_since``: the first of the failed attempts since the last one
  that succeeded (null while the last attempt succeeded);
- ``faults``: the faults armed for it, when the testing tools are on;
- ``clock``: the service's clock (getClock), and ``clock_moves``: when it
  moved ahead and its offset from then on (a row dated after a move is marked
  with that move's offset, one dated before none).

``GET bots/<bot>/calls.json`` (Save the list) answers, as a file to
download, every kept call of the bot that the same filters select, as
getBotCalls gives them (with ``detail`` where it has it), newest first.

Everything through the operator methods and the domain functions the API
and the CLI use. Asked every second by the page: the access line is at DEBUG.
"""
from __future__ import annotations

import re
import time
from urllib.parse import urlsplit, urlunsplit

from flask import Response, request

from botsvc import clock, logs
from botsvc.db import get_db
from botsvc.domain import bots, faults, webhooks
from botsvc.errors import invalid
from botsvc.jsontext import dumps
from botsvc.sandbox import bp, calls, json_ok, settings

CALLS_SHOWN = 50
# The calls newer than the newest the page holds: a first page this small
# (a poll a second usually finds none or a few), then pages of CALLS_PAGE
# back to that call: at most the call log's 1,000 kept records.
CALLS_FIRST_PAGE = 10
CALLS_PAGE = 100
CALLS_PAGES_MAX = 11   # 10 + 10 x 100: every one of the 1,000 kept
DELIVERIES_SHOWN = 20
# getUpdates records read to count the recorded polls of the rate's window.
RECENT_POLLS_COUNTED = 100
# The polling rate's window: short, so that the rate follows a bot that
# starts or stops within seconds (a minute's count lagged up to 60 s).
RATE_WINDOW_S = 10


def failing_since(deliveries: list[dict]) -> int | None:
    """When the current run of failed attempts began: the oldest failure
    newer than the newest success (deliveries are newest first)."""
    since = None
    for attempt in deliveries:
        if _succeeded(attempt):
            break
        since = attempt["started_at"]
    return since


# A bot token anywhere in the URL (a bot that keys its webhook by its own
# token), and each value of its query string (a key, a signature): what the
# pulse shows of the URL, never those. The marks are the call log's and the
# delivery records'.
_TOKEN_SHAPED = re.compile(r"[0-9]{1,18}:[A-Za-z0-9_-]{43}")
TOKEN_MARK, VALUE_MARK = "[token]", "[redacted]"


def shown_webhook_url(url: str) -> str:
    """The webhook URL as the page shows it: a token in it replaced by
    ``[token]``, each query value (and a fragment) by ``[redacted]``, the
    names kept so a developer still sees which parameters it carries."""
    if not url:
        return url
    parts = urlsplit(_TOKEN_SHAPED.sub(TOKEN_MARK, url))
    query = "&".join(f"{pair.split('=', 1)[0]}={VALUE_MARK}" if "=" in pair else VALUE_MARK
                     for pair in parts.query.split("&") if pair)
    return urlunsplit(parts._replace(query=query,
                                     fragment=VALUE_MARK if parts.fragment else ""))


def _succeeded(attempt: dict) -> bool:
    return "error" not in attempt and 200 <= attempt.get("http_status", 0) < 300


# getBotCalls' filters as the page's query names them: how each query text
# becomes the JSON value getBotCalls' schema takes (and judges). A filter
# the schema does not declare is refused, not ignored.
_FILTERS = {"method": str, "failures_only": lambda v: {"1": True, "0": False}.get(v, v),
            "chat_id": lambda v: int(v) if v.lstrip("-").isdigit() and len(v) < 19 else v,
            "since": lambda v: int(v) if v.isdigit() and len(v) < 19 else v,
            "until": lambda v: int(v) if v.isdigit() and len(v) < 19 else v,
            "search": str}


def _call_filters() -> dict:
    declared = calls.schema_fields("getBotCalls")
    params: dict = {}
    for name, convert in _FILTERS.items():
        value = request.args.get(name)
        if value is None or value == "":
            continue
        if name not in declared:
            raise invalid(name, f"getBotCalls has no {name} filter here")
        params[name] = convert(value)
    if params.get("failures_only") is False:
        del params["failures_only"]
    if "detail" in declared:   # error parameters, injected marks, cut previews
        params["detail"] = True
    return params


def _calls_since(bot_id: int, after_call: int, filters: dict) -> tuple[dict, list[dict]]:
    """The kept calls newer than ``after_call``, newest first, read back
    through getBotCalls' pages (with the first page's answer: the poll
    counts, and on a first read, 0, the cursor to the calls before)."""
    if after_call == 0:
        first = calls.run("getBotCalls", {"bot_id": bot_id, "limit": CALLS_SHOWN, **filters})
        return first, first["calls"]
    found: list[dict] = []
    cursor = first = None
    # Where getBotCalls can bound its read itself, it does (one index range).
    bound = ({"after_call_id": after_call}
             if "after_call_id" in calls.schema_fields("getBotCalls") else {})
    for _ in range(CALLS_PAGES_MAX):
        params = {"bot_id": bot_id, "limit": CALLS_PAGE if cursor else CALLS_FIRST_PAGE,
                  **filters, **bound}
        if cursor:
            params["cursor"] = cursor
        answer = calls.run("getBotCalls", params)
        first = first or answer
        newer = [c for c in answer["calls"] if c["call_id"] > after_call]
        found += newer
        cursor = answer["next_cursor"]
        if len(newer) < len(answer["calls"]) or not cursor:
            break
    return {**first, "next_cursor": None}, found


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
    filters = _call_filters()
    log, listed = _calls_since(bot_id, after_call, filters)
    polls = calls.run("getBotCalls", {"bot_id": bot_id, "method": "getUpdates",
                                      "limit": RECENT_POLLS_COUNTED})["calls"]
    now = clock.time()
    info = webhooks.webhook_info(conn, bot_id, now)
    deliveries = calls.run("getWebhookDeliveries", {"bot_id": bot_id,
                                                    "limit": DELIVERIES_SHOWN})["deliveries"]
    return json_ok({
        "bot": {"id": bot["id"], "username": bot["username"],
                "display_name": bot["display_name"], "disabled": bool(bot["disabled"])},
        "calls": listed, "older_cursor": log["next_cursor"],
        "empty_polls": log["empty_polls"], "last_poll_at": log["last_poll_at"],
        # Dates are whole seconds (a call at 100.9 s is dated 100): the window
        # is counted in whole seconds too, or a call could leave it early.
        "recent_polls": sum(1 for c in polls if c["date"] >= int(now) - RATE_WINDOW_S),
        "mode": "webhook" if info["url"] else "polling",
        "webhook": {**info, "url": shown_webhook_url(info["url"])},
        "deliveries": deliveries,
        "failing_since": failing_since(deliveries),
        "faults": faults.armed(conn, bot_id) if settings().test_tools else None,
        "clock": calls.run("getClock", {}),
        # Which rows were dated after the clock moved ahead, and by how far.
        "clock_moves": clock.moves(conn),
    })


# Save the list: getBotCalls' pages read to the end (the log keeps 1,000
# calls a bot: ten pages; one more finds the end).
SAVED_PAGES_MAX = 11
_FILE_NAME_UNSAFE = re.compile(r"[^A-Za-z0-9_-]")


@bp.route("/bots/<int:bot_id>/calls.json")
def saved_calls(bot_id: int) -> Response:
    """The filtered call records as a file, the way a browser's Network panel
    saves a HAR: ``{bot, saved_at, getBotCalls, calls}``, where
    ``getBotCalls`` holds the parameters they were read with (its filters)
    and ``calls`` every kept record they select, exactly as getBotCalls
    gives them, newest first."""
    bot = bots.require_bot(get_db(), bot_id)
    asked = {"bot_id": bot_id, **_call_filters()}
    records: list[dict] = []
    cursor = None
    for _ in range(SAVED_PAGES_MAX):
        page = calls.run("getBotCalls", {**asked, "limit": CALLS_PAGE,
                                         **({"cursor": cursor} if cursor else {})})
        records += page["calls"]
        cursor = page["next_cursor"]
        if not cursor:
            break
    now = clock.now()
    saved = {"bot": {"id": bot["id"], "username": bot["username"]}, "saved_at": now,
             "getBotCalls": asked, "calls": records}
    stamp = time.strftime("%Y%m%d-%H%M%S", time.gmtime(now))
    name = f"botsvc-calls-{_FILE_NAME_UNSAFE.sub('_', bot['username'])}-{stamp}.json"
    return Response(dumps(saved), mimetype="application/json",
                    headers={"Content-Disposition": f'attachment; filename="{name}"'})
