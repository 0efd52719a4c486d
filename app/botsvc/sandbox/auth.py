"""Signing in with the admin token, and out again.

The sign-in form is protected like every other change: a random value in a
short-lived cookie must come back in the form (there is no session yet to
hold a CSRF token). Wrong tokens are throttled per address
(``botsvc.domain.signin_throttle``).
"""
from __future__ import annotations

import secrets

from flask import Response, make_response, redirect, render_template, request, url_for

from botsvc.auth import check_admin_token
from botsvc.connection import wire
from botsvc.db import get_db
from botsvc.domain import sandbox_sessions as sessions
from botsvc.domain import signin_throttle as throttle
from botsvc.sandbox import SESSION_COOKIE, bp, fingerprint, settings

SIGNIN_COOKIE = "botsvc_sandbox_signin"


def _secure() -> bool:
    return settings().base_url.lower().startswith("https://")


def _set_cookie(response: Response, name: str, value: str, path: str) -> None:
    response.set_cookie(name, value, path=path, httponly=True, samesite="Strict",
                        secure=_secure())


def _return_to() -> str:
    """Where the person was before signing in (a GET of a sandbox page, from
    the query or the form's copy of it); else the chats. Only a path of this
    sandbox: never another site (``//host``, ``/\\host``), never a JSON route."""
    wanted = request.values.get("next", "")
    home = url_for("sandbox.home")
    if (not wanted.startswith(home) or "\\" in wanted or wanted.startswith("//")
            or any(ord(c) < 0x20 for c in wanted) or len(wanted) > 2000):
        return home
    return wanted


def _signin_page(message: str | None, status: int, notice: str | None = None,
                 retry_after: int | None = None) -> Response:
    form_token = secrets.token_urlsafe(32)
    next_path = _return_to()
    response = make_response(render_template(
        "sandbox/signin.html", form_token=form_token, message=message, notice=notice,
        next_path=None if next_path == url_for("sandbox.home") else next_path), status)
    _set_cookie(response, SIGNIN_COOKIE, form_token, url_for("sandbox.signin"))
    if retry_after is not None:
        response.headers["Retry-After"] = str(retry_after)
    return response


@bp.route("/signin", methods=["GET", "POST"])
def signin():
    conn = get_db()
    if sessions.find_session(conn, request.cookies.get(SESSION_COOKIE), fingerprint()):
        return redirect(url_for("sandbox.home"), 303)
    if request.method == "GET":
        notice = "You are signed out." if request.args.get("signed_out") else None
        return _signin_page(None, 200, notice)
    form_token, cookie_token = request.form.get("csrf_token"), request.cookies.get(SIGNIN_COOKIE)
    if not form_token or not cookie_token or not secrets.compare_digest(
            form_token.encode("utf-8", "surrogateescape"),
            cookie_token.encode("utf-8", "surrogateescape")):
        return _signin_page("This sign-in form had expired. Please enter the token again.", 403)
    presented = request.form.get("token", "")
    if not presented:
        return _signin_page("Enter the admin token (the BOTSVC_ADMIN_TOKEN setting).", 400)
    admin_token = settings().admin_token
    try:
        right = throttle.attempt(conn, throttle.client_key(wire.client_address(request.environ)),
                                 lambda: check_admin_token(presented, admin_token))
    except throttle.Throttled as wait:
        return _signin_page(f"Too many wrong tokens from your address. Try again in "
                            f"{wait.retry_after} s.", 429, retry_after=wait.retry_after)
    if not right:
        return _signin_page("That is not the admin token of this installation "
                            "(the BOTSVC_ADMIN_TOKEN setting).", 401)
    session_id, _ = sessions.open_session(conn, fingerprint())
    response = redirect(_return_to(), 303)
    _set_cookie(response, SESSION_COOKIE, session_id, url_for("sandbox.home"))
    response.delete_cookie(SIGNIN_COOKIE, path=url_for("sandbox.signin"))
    return response


@bp.route("/signout", methods=["POST"])
def signout():
    sessions.close_session(get_db(), request.cookies.get(SESSION_COOKIE))
    response = redirect(url_for("sandbox.signin", signed_out=1), 303)
    response.delete_cookie(SESSION_COOKIE, path=url_for("sandbox.home"),
                           httponly=True, samesite="Strict", secure=_secure())
    return response
