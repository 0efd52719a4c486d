"""GET and HEAD {base_url}/download.php: a file's bytes, for its bot.

Two ways in, as the contract fixes them:
- bearer: ``Authorization: Bearer <bot token>`` and ``?file_id=``; a file of
  another bot is FILE_NOT_FOUND, exactly like an unknown one;
- signed: ``?id=&exp=&sig=`` as getFile returned it; the bot is the file's
  owner, taken from its row. A bad, expired or tampered link is UNAUTHORIZED.

Checks run in the order of every other route: platform, credentials, bot
disabled, parameters, the file. The answer is app/botsvc/file_response.py: streamed,
one byte range as 206, anything else in a Range header 416. The access log
records the path only, so a signed link (a bearer capability) never reaches a
log.
"""
from __future__ import annotations

import sqlite3

from flask import Blueprint, Response, current_app, request

from botsvc import clock
from botsvc.auth import authenticate_bot, bearer_token, bot_disabled, platform_disabled
from botsvc.db import get_db
from botsvc.domain import file_links, files
from botsvc.domain.bots import is_platform_disabled, require_bot
from botsvc.errors import ApiError, ErrorCode, MethodNotAllowed, invalid
from botsvc.file_response import file_not_found, file_response

bp = Blueprint("download", __name__)
ALL_HTTP_METHODS = ["GET", "HEAD", "POST", "PUT", "PATCH", "DELETE", "OPTIONS"]
SIGNED_PARAMS = ("id", "exp", "sig")
BEARER_PARAMS = ("file_id",)


@bp.route(file_links.ROUTE, methods=ALL_HTTP_METHODS, provide_automatic_options=False)
def download() -> Response:
    if request.method not in ("GET", "HEAD"):
        raise MethodNotAllowed(("GET", "HEAD"), "The download route answers GET and HEAD")
    conn = get_db()
    if any(name in request.args for name in SIGNED_PARAMS):
        row = _signed_file(conn)
    else:
        row = _bearer_file(conn)
    return file_response(row, current_app.config["SETTINGS"].data_dir)


def _single(name: str, on_repeat: ApiError | None = None) -> str | None:
    values = request.args.getlist(name)
    if len(values) > 1:
        raise on_repeat or invalid(name, f"Parameter {name} is given more than once")
    return values[0] if values else None


def _reject_unknown(allowed: tuple[str, ...]) -> None:
    for name in request.args:
        if name not in allowed:
            raise invalid(name, f"Unknown parameter: {name}")


def _bearer_file(conn: sqlite3.Connection) -> sqlite3.Row:
    bot = authenticate_bot(conn, bearer_token(request.headers.get("Authorization")))
    if bot.disabled:
        raise bot_disabled()
    _reject_unknown(BEARER_PARAMS)
    file_id = _single("file_id")
    if not file_id:
        raise invalid("file_id", "file_id is required (or use the signed URL from getFile)")
    row = files.find_clean_file(conn, bot.id, file_id)
    if row is None:
        # Malformed ids included: like chat_id, any string that is not one of
        # this bot's files is simply not found.
        raise file_not_found()
    return row


def _signed_file(conn: sqlite3.Connection) -> sqlite3.Row:
    if is_platform_disabled(conn):
        raise platform_disabled()
    clock.refresh(conn)  # no token query here to bring the offset along
    bad_link = ApiError(ErrorCode.UNAUTHORIZED, "The download link is invalid")
    file_id = _single("id", bad_link) or ""
    exp = file_links.parse_exp(_single("exp", bad_link))
    sig = _single("sig", bad_link)
    row = files.find_clean_file(conn, None, file_id)
    secret = current_app.config["SETTINGS"].secret_key
    # Unknown ids are compared too (against bot 0), so timing tells nothing.
    valid = file_links.signature_matches(secret, file_id, row["bot_id"] if row else 0,
                                         exp if exp is not None else 0, sig)
    if not valid or row is None or exp is None:
        raise bad_link
    if exp < clock.time():
        raise ApiError(ErrorCode.UNAUTHORIZED, "The download link has expired")
    if require_bot(conn, row["bot_id"])["disabled"]:
        raise bot_disabled()
    _reject_unknown(SIGNED_PARAMS)
    return row
