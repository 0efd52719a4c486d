"""The sandbox's pages: the bot manager, a bot's own page (its pulse), and
the messenger (users and chats).

Pages only show; every change is a call of ``/sandbox/api/<method>`` made by
the page's script with the session's CSRF token. No page ever holds a token:
a new bot's token reaches the browser once, in the answer to that call.
"""
from __future__ import annotations

from flask import g, redirect, render_template, request, url_for

from botsvc import clock
from botsvc.api.registry import METHODS as API_METHODS
from botsvc.db import get_db
from botsvc.domain import bots, faults
from botsvc.sandbox import bp, calls, overview, settings

# The users the sidebar offers (the newest; the one open is always there).
USERS_LISTED = 200


@bp.context_processor
def page_values() -> dict:
    session = getattr(g, "sandbox_session", None)
    return {"csrf_token": session.csrf_token if session else None,
            "platform_disabled": bots.is_platform_disabled(get_db()) if session else False,
            "test_tools": settings().test_tools,
            # The service clock when the page was made: "today" and "ago" on
            # the page follow it (advanceClock moves it), not the machine's.
            "service_now": clock.time()}


def _pulse_values(bot: dict) -> dict:
    return {"pulse_bot": bot, "api_methods": sorted(API_METHODS),
            "call_filters": sorted(calls.schema_fields("getBotCalls")
                                   - {"bot_id", "limit", "cursor", "wait_ms"}),
            "fault_codes": [code.value for code in faults.INJECTABLE_CODES]}


@bp.route("/bots")
def bot_manager():
    return render_template("sandbox/bots.html", bots=overview.bot_cards(get_db()),
                           section="bots")


@bp.route("/bots/<int:bot_id>")
def bot_page(bot_id: int):
    bot = overview.find_bot(get_db(), bot_id)
    if bot is None:
        return render_template("sandbox/missing.html", section="bots", what="bot"), 404
    return render_template("sandbox/bot.html", section="bots", **_pulse_values(bot))


def _users(conn, user_id: int | None) -> tuple[list[dict], dict | None]:
    """The users to offer, and the one asked for (None when there is no such
    user; the newest when none was asked for)."""
    users = overview.users(conn, USERS_LISTED)
    if user_id is None:
        return users, users[0] if users else None
    user = next((u for u in users if u["user_id"] == user_id), None)
    if user is None:
        user = overview.find_user(conn, user_id)
        if user is not None:
            users.append(user)
    return users, user


@bp.route("/chats")
def chats():
    conn = get_db()
    users, user = _users(conn, request.args.get("user", type=int))
    entries = overview.chat_list(conn, user["user_id"]) if user else []
    # "Chat with it" on a bot's page: that bot's chat, as the user shown.
    wanted = request.args.get("bot", type=int)
    if user and any(e["bot"]["id"] == wanted for e in entries):
        return redirect(url_for("sandbox.chat", user_id=user["user_id"], bot_id=wanted))
    return render_template("sandbox/chats.html", users=users, user=user, entries=entries,
                           open_bot=None, want_bot=wanted, section="chats")


@bp.route("/chats/<int:user_id>/<int:bot_id>")
def chat(user_id: int, bot_id: int):
    conn = get_db()
    users, user = _users(conn, user_id)
    entries = overview.chat_list(conn, user_id) if user else []
    entry = next((e for e in entries if e["bot"]["id"] == bot_id), None)
    if user is None or entry is None:
        return render_template("sandbox/missing.html", section="chats", what="chat"), 404
    urls = {name: url_for(f"sandbox.{endpoint}", user_id=user_id, bot_id=bot_id)
            for name, endpoint in (("state", "chat_state"), ("history", "chat_history"),
                                   ("inspect", "inspect"), ("read", "mark_read"))}
    urls["media"] = url_for("sandbox.media", user_id=user_id, bot_id=bot_id, message_id=0,
                            file_id="_")
    return render_template(
        "sandbox/chats.html", users=users, user=user, entries=entries, open_bot=entry["bot"],
        state=entry["state"], section="chats", chat_urls=urls,
        base_url=settings().base_url, **_pulse_values(entry["bot"]))
