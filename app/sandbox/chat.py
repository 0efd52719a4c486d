"""The JSON the sandbox's scripts call, and the media of a chat.

- ``GET chats/<user>/<bot>/state?since=V``: the chat as the user sees it
  (userGetChat) with its membership and a version; when the version is still
  ``V`` the answer is only ``{changed: false}``, one indexed read, so a page
  can ask every second. The version is bumped by triggers (migration 0009)
  whenever a message, an answer or the membership of that chat changes.
- ``POST api/<method>``: an operator method, with the same body rules and
  answers as /manage/v1 (JSON, or multipart for userSendMedia).
- ``GET media/<user>/<bot>/<message_id>/<file_id>``: the file message
  ``message_id`` of that chat shows, served as the download route serves it
  (ranges, ETag, nosniff), for the signed-in person only, and only while
  that message shows it. No token, no signed link: the session is the
  credential.
"""
from __future__ import annotations

from flask import Response, request

from app import disk
from app.body import is_form_request, parse_body
from app.db import get_db
from app.domain import chat_changes, chats, files, messages
from app.download import file_not_found, file_response
from app.errors import ApiError, ErrorCode
from app.manage.dispatch import OPERATOR_METHODS
from app.sandbox import bp, calls, json_ok, settings
from app.sandbox.overview import membership


@bp.route("/chats/<int:user_id>/<int:bot_id>/state")
def chat_state(user_id: int, bot_id: int) -> Response:
    conn = get_db()
    # Read the version before the view: a change in between makes the next
    # poll fetch again, never miss it.
    chat = chats.find_user_chat(conn, bot_id, user_id)
    version = f"{chat['id']}.{chat_changes.chat_version(conn, chat)}" if chat else "none"
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


@bp.route("/media/<int:user_id>/<int:bot_id>/<int:message_id>/<file_id>",
          methods=["GET", "HEAD"])
def media(user_id: int, bot_id: int, message_id: int, file_id: str) -> Response:
    conn = get_db()
    chat = chats.find_user_chat(conn, bot_id, user_id)
    if chat is None or not messages.shows_file(conn, bot_id, chat, message_id, file_id):
        raise file_not_found()
    row = files.find_clean_file(conn, bot_id, file_id)
    if row is None:
        raise file_not_found()
    return file_response(row)
