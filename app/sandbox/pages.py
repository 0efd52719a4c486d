"""The sandbox's pages: the bot manager and the messenger (users and chats).

Pages only show; every change is a call of ``/sandbox/api/<method>`` made by
the page's script with the session's CSRF token. No page ever holds a token:
a new bot's token reaches the browser once, in the answer to that call.
"""
from __future__ import annotations

from flask import g, render_template, request, url_for

from app.db import get_db
from app.domain import bots
from app.sandbox import bp, overview


@bp.context_processor
def page_values() -> dict:
    session = getattr(g, "sandbox_session", None)
    return {"csrf_token": session.csrf_token if session else None,
            "platform_disabled": bots.is_platform_disabled(get_db()) if session else False}


@bp.route("/bots")
def bot_manager():
    return render_template("sandbox/bots.html", bots=overview.bot_cards(get_db()),
                           section="bots")


def _user(users: list[dict], user_id: int | None) -> dict | None:
    return next((u for u in users if u["user_id"] == user_id), None)


@bp.route("/chats")
def chats():
    conn = get_db()
    users = overview.users(conn)
    user = _user(users, request.args.get("user", type=int))
    if user is None and users:
        user = users[0]
    entries = overview.chat_list(conn, user["user_id"]) if user else []
    return render_template("sandbox/chats.html", users=users, user=user, entries=entries,
                           open_bot=None, section="chats")


@bp.route("/chats/<int:user_id>/<int:bot_id>")
def chat(user_id: int, bot_id: int):
    conn = get_db()
    users = overview.users(conn)
    user = _user(users, user_id)
    entries = overview.chat_list(conn, user_id) if user else []
    entry = next((e for e in entries if e["bot"]["id"] == bot_id), None)
    if user is None or entry is None:
        return render_template("sandbox/missing.html", section="chats"), 404
    return render_template(
        "sandbox/chats.html", users=users, user=user, entries=entries, open_bot=entry["bot"],
        state=entry["state"], section="chats",
        chat_urls={"state": url_for("sandbox.chat_state", user_id=user_id, bot_id=bot_id),
                   "media": url_for("sandbox.media", user_id=user_id, bot_id=bot_id,
                                    message_id=0, file_id="_")})
