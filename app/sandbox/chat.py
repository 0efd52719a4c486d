"""The JSON the sandbox's scripts call, and the media of a chat.

- ``GET chats/<user>/<bot>/state?since=V``: the chat as the user sees it
  (userGetChat) with its membership and a version; when the version is still
  ``V`` the answer is only ``{changed: false}``, one indexed read, so a page
  can ask every second. The version is bumped by triggers (migration 0009)
  whenever a message, an answer or the membership of that chat changes.
- ``POST api/<method>``: an operator method, with the same body rules and
  answers as /manage/v1 (JSON, or multipart for userSendMedia).
- ``GET media/<user>/<bot>/<file_id>``: a file shown in that chat, served as
  the download route serves it (ranges, ETag, nosniff), for the signed-in
  person only, and only while a message of that chat shows it. No token, no
  signed link: the session is the credential.
"""
from __future__ import annotations

import sqlite3

from flask import Response, request

from app import disk
from app.body import is_form_request, parse_body
from app.db import get_db
from app.domain import files
from app.errors import ApiError, ErrorCode
from app.file_response import file_not_found, file_response
from app.manage.dispatch import OPERATOR_METHODS
from app.sandbox import bp, calls, json_ok, settings
from app.sandbox.overview import membership


def _chat_row(conn: sqlite3.Connection, user_id: int, bot_id: int) -> sqlite3.Row | None:
    return conn.execute(
        "SELECT c.*, COALESCE(v.version, 0) AS version FROM chats c"
        " LEFT JOIN sandbox_chat_versions v ON v.chat_ref = c.id"
        " WHERE c.bot_id = ? AND c.user_id = ?", (bot_id, user_id)).fetchone()


@bp.route("/chats/<int:user_id>/<int:bot_id>/state")
def chat_state(user_id: int, bot_id: int) -> Response:
    conn = get_db()
    # Read the version before the view: a change in between makes the next
    # poll fetch again, never miss it.
    chat = _chat_row(conn, user_id, bot_id)
    version = f"{chat['id']}.{chat['version']}" if chat else "none"
    if request.args.get("since") == version:
        return json_ok({"version": version, "changed": False})
    try:
        view = calls.run("userGetChat", {"user_id": user_id, "bot_id": bot_id})
    except ApiError as error:
        if error.code != ErrorCode.CHAT_NOT_FOUND:
            raise
        view = None  # this user never started this bot
    return json_ok({"version": version, "changed": True, "membership": membership(chat),
                    "chat": view})


@bp.route("/api/<name>", methods=["POST"])
def call(name: str) -> Response:
    if not calls.is_callable(name):
        raise ApiError(ErrorCode.METHOD_NOT_FOUND, f"Method {name} not found")
    if OPERATOR_METHODS[name].file_fields and is_form_request(request):
        disk.check_room_for_upload(settings().data_dir, settings().min_free_bytes)
    return json_ok(calls.run(name, parse_body(request, settings().upload_max_bytes)))


@bp.route("/media/<int:user_id>/<int:bot_id>/<file_id>", methods=["GET", "HEAD"])
def media(user_id: int, bot_id: int, file_id: str) -> Response:
    conn = get_db()
    chat = _chat_row(conn, user_id, bot_id)
    if chat is None or not _chat_shows(conn, chat, file_id):
        raise file_not_found()
    row = files.find_clean_file(conn, bot_id, file_id)
    if row is None:
        raise file_not_found()
    return file_response(row, settings().data_dir)


def _chat_shows(conn: sqlite3.Connection, chat: sqlite3.Row, file_id: str) -> bool:
    """Whether a message of this chat, not deleted, shows this file now."""
    return conn.execute(
        "SELECT 1 FROM messages WHERE chat_ref = ? AND deleted_at IS NULL"
        " AND json_extract(content, '$.media.file_id') = ? LIMIT 1",
        (chat["id"], file_id)).fetchone() is not None
