"""The sandbox: the messenger in a browser.

``/sandbox/`` exists only while an admin token is configured; otherwise each
of its paths answers exactly as an unknown path does. A person signs in with
the admin token once and gets a session cookie. Every page and JSON answer
carries a strict Content-Security-Policy (scripts and styles only from this
origin, no inline ones), and every state change must carry the session's
CSRF token. The pages act through the operator methods of /manage/v1
(``calls.py``) and read through the domain's functions, never through rules
or SQL of their own (sessions and the sign-in throttle included:
``botsvc.domain.sandbox_sessions``, ``botsvc.domain.signin_throttle``).

Modules: ``auth`` (sign-in and sign-out), ``pages`` (the bot manager, a
bot's page and the chats), ``chat`` (the JSON the chat page calls, and the
media route), ``pulse`` (a bot's calls, delivery and faults, live), ``update_path``
(one update's path: its delivery and the bot's reaction).
"""
from __future__ import annotations

from flask import Blueprint, Response, current_app, g, redirect, request, url_for
from werkzeug.exceptions import NotFound

from botsvc import clock
from botsvc.db import get_db
from botsvc.domain import sandbox_sessions as sessions
from botsvc.envelope import json_response, ok_body
from botsvc.errors import ApiError, ErrorCode

bp = Blueprint("sandbox", __name__, url_prefix="/sandbox", template_folder="templates",
               static_folder="static")

CSP = ("default-src 'none'; script-src 'self'; style-src 'self'; img-src 'self';"
       " media-src 'self'; connect-src 'self'; form-action 'self'; base-uri 'none';"
       " frame-ancestors 'none'; object-src 'none'")
CSRF_HEADER = "X-CSRF-Token"
# The session cookie: a random id; the database keeps only its SHA-256.
SESSION_COOKIE = "botsvc_sandbox"
# Reached without a session: the sign-in form and the files it needs.
PUBLIC_ENDPOINTS = {"sandbox.signin", "sandbox.static"}
# Answer JSON (401 when signed out) rather than a redirect to the sign-in page.
JSON_ENDPOINTS = {"sandbox.chat_state", "sandbox.chat_history", "sandbox.inspect",
                  "sandbox.mark_read", "sandbox.user_chats", "sandbox.bot_pulse", "sandbox.call",
                  "sandbox.media", "sandbox.update_path", "sandbox.bot_replays",
                  "sandbox.webhook_attempt"}


def settings():
    return current_app.config["SETTINGS"]


def fingerprint() -> bytes:
    s = settings()
    return sessions.admin_fingerprint(s.secret_key, s.admin_token)


@bp.before_request
def guard():
    if settings().admin_token is None:
        raise NotFound()  # no sandbox at all: the same answer as any unknown path
    if request.endpoint in PUBLIC_ENDPOINTS:
        return None
    conn = get_db()
    clock.refresh(conn)  # pages show the service's dates, as /v2 does
    g.sandbox_session = sessions.find_session(conn, request.cookies.get(SESSION_COOKIE),
                                              fingerprint())
    if g.sandbox_session is None:
        if request.endpoint in JSON_ENDPOINTS:
            raise ApiError(ErrorCode.UNAUTHORIZED, "Sign in to the sandbox first")
        # Back to this page once signed in (a page, never a change).
        back = request.full_path.rstrip("?") if request.method == "GET" else None
        back = None if back == url_for("sandbox.home") else back
        return redirect(url_for("sandbox.signin", next=back))
    if request.method not in ("GET", "HEAD") and not sessions.csrf_matches(
            g.sandbox_session, presented_csrf_token()):
        raise ApiError(ErrorCode.CSRF_FAILED, "This request lacks the page's CSRF token;"
                                              " reload the page and try again")
    return None


def presented_csrf_token() -> str | None:
    """The header (fetch calls), else the field of a plain urlencoded form.
    Multipart bodies are never parsed here: their size limit is set later."""
    token = request.headers.get(CSRF_HEADER)
    if token is None and request.mimetype == "application/x-www-form-urlencoded":
        token = request.form.get("csrf_token")
    return token


@bp.after_request
def note_session_seen(response: Response) -> Response:
    # After the answer, never before the body is read: a request parked
    # until its body arrives runs again from its first byte (docs/DEVELOPING.md).
    session = g.get("sandbox_session")
    if session is not None:
        sessions.note_seen(get_db(), session)
    return response


@bp.after_app_request
def security_headers(response: Response) -> Response:
    # Every answer under /sandbox/: those of no route (404) too, which no
    # hook of the blueprint itself sees.
    path = request.path
    if settings().admin_token is None or not (path == "/sandbox" or path.startswith("/sandbox/")):
        return response
    headers = response.headers
    # The media route keeps the download route's stricter policy and caching.
    headers.setdefault("Content-Security-Policy", CSP)
    headers.setdefault("Cache-Control", "no-cache" if request.endpoint == "sandbox.static"
                       else "no-store")
    headers["X-Frame-Options"] = "DENY"
    headers["Referrer-Policy"] = "no-referrer"
    headers["X-Content-Type-Options"] = "nosniff"
    headers["Cross-Origin-Opener-Policy"] = "same-origin"
    headers["Cross-Origin-Resource-Policy"] = "same-origin"
    return response


@bp.route("/")
def home():
    return redirect(url_for("sandbox.chats"))


def json_ok(result) -> Response:
    return json_response(200, ok_body(result))


from botsvc.sandbox import auth, chat, pages, pulse, update_path  # noqa: E402,F401  (routes)
