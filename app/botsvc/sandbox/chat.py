"""The JSON the chat page's script calls, and the media of a chat.

- ``GET chats/<user>/<bot>/state?since=POSITION``: the chat as its user
  sees it. Without a position (or with one of another chat): the newest page
  of userGetChat, its journal lines, the membership and a position. With the
  position the page holds: ``{changed: false}`` while the chat's version is
  the same (one indexed read, so a page can ask every second), otherwise
  only what came after it (``botsvc.domain.chat_changes``). Every answer holds
  the service clock's ``now``, which times an unanswered click.
- ``GET chats/<user>/<bot>/history?before_message_id=N``: an older page
  (userGetChat's paging) with its journal lines.
  Both whole views carry ``click_answers``: the answers to the clicks of
  their journal lines, a deleted card's too.
- ``GET chats/<user>/<bot>/inspect?message_id=N`` (or ``event_id=N``): what
  the inspector shows of a message: the update its sending or its clicks
  queued for the bot, the answers, and the bot's calls that sent or changed it.
- ``POST chats/<user>/<bot>/read``: the user has read up to ``message_id``.
- ``GET users/<user>/chats?since=V``: the sidebar's chat list (each chat's
  last message and unread count), ``{changed: false}`` while unchanged.
- ``POST api/<method>``: an operator method, with the same body rules and
  answers as /manage/v1 (JSON, or multipart for userSendMedia).
- ``GET media/<user>/<bot>/<message_id>/<file_id>``: the file message
  ``message_id`` of that chat shows, served as the download route serves it
  (ranges, ETag, nosniff), for the signed-in person only, and only while
  that message shows it. No token, no signed link: the session is the
  credential.

Polls (state, the chat list, the bot's pulse) write their access line at
DEBUG: a page asks every second.
"""
from __future__ import annotations

from flask import Response, request

from botsvc import clock, disk, logs
from botsvc.catalogue.body import is_form_request, parse_body
from botsvc.catalogue.validation import Int, StrictSchema, load
from botsvc.db import get_db
from botsvc.domain import bots, callbacks, chat_changes, chat_events, chats, files, messages
from botsvc.domain.chat_changes import Position
from botsvc.errors import ApiError, ErrorCode, invalid
from botsvc.file_response import file_not_found, file_response
from botsvc.manage.dispatch import OPERATOR_METHODS
from botsvc.sandbox import bp, calls, json_ok, settings
from botsvc.sandbox.overview import chat_list, membership

# Messages per page the chat page loads (the newest first, older on scroll).
PAGE_SIZE = 50
# getBotCalls' largest page: the inspector reads the whole log in the fewest calls.
CALL_LOG_PAGE = 100


def _chat(user_id: int, bot_id: int):
    """The user's chat with the bot, CHAT_NOT_FOUND (field bot_id) before
    their first Start; unknown users and bots as the operator API refuses them."""
    return chats.user_chat(get_db(), bot_id, user_id)


def _int_arg(name: str, minimum: int = 0) -> int | None:
    value = request.args.get(name)
    if value is None:
        return None
    if not value.isdigit() or len(value) > 18 or int(value) < minimum:
        raise invalid(name, f"{name} must be an integer of at least {minimum}")
    return int(value)


@bp.route("/chats/<int:user_id>/<int:bot_id>/state")
def chat_state(user_id: int, bot_id: int) -> Response:
    logs.quiet_access_line()
    conn = get_db()
    now = clock.now()
    chat = chats.find_user_chat(conn, bot_id, user_id)
    if chat is None:
        bots.require_bot(conn, bot_id)   # an unknown bot or user is refused, as
        bots.require_user(conn, user_id)  # userGetChat refuses them
        if request.args.get("since") == "none":
            return json_ok({"version": "none", "now": now, "changed": False})
        return json_ok({"version": "none", "now": now, "changed": True, "full": True,
                        "membership": "not started", "chat": None, "events": []})
    held = Position.parse(request.args.get("since"))
    if held is not None and held.chat_ref == chat["id"]:
        if held.version == chat_changes.chat_version(conn, chat):
            return json_ok({"version": held.text(), "now": now, "changed": False})
        changes = chat_changes.changes_since(conn, chat, held)
        if changes is not None:
            return json_ok({"version": changes["position"].text(), "now": now,
                            "changed": True, "full": False, "membership": membership(chat),
                            "status": chat["status"], "messages": changes["messages"],
                            "deleted": changes["deleted"],
                            "callback_answers": changes["callback_answers"],
                            "events": changes["events"]})
    position = chat_changes.position(conn, chat)
    view = calls.run("userGetChat", {"user_id": user_id, "bot_id": bot_id,
                                     "limit": PAGE_SIZE})
    events = _page_events(conn, chat, view, None)
    return json_ok({"version": position.text(), "now": now, "changed": True, "full": True,
                    "membership": membership(chat), "chat": view, "events": events,
                    "click_answers": _click_answers(conn, chat, events)})


def _page_events(conn, chat, page: dict, before: int | None) -> list[dict]:
    """The journal lines placed among a page's messages: after its first
    message (after nothing, for the oldest page) and before ``before``."""
    first = page["messages"][0]["message_id"] if page["messages"] else None
    after = first - 1 if first is not None and page["has_more"] else -1
    up_to = messages.NO_MESSAGE_ID_ABOVE if before is None else before - 1
    return chat_events.events_between(conn, chat, after, up_to)


@bp.route("/chats/<int:user_id>/<int:bot_id>/history")
def chat_history(user_id: int, bot_id: int) -> Response:
    before = _int_arg("before_message_id", minimum=1)
    if before is None:
        raise invalid("before_message_id",
                      "before_message_id must be the first message_id of the page held")
    page = calls.run("userGetChat", {"user_id": user_id, "bot_id": bot_id,
                                     "limit": PAGE_SIZE, "before_message_id": before})
    chat = _chat(user_id, bot_id)
    events = _page_events(get_db(), chat, page, before)
    return json_ok({**page, "events": events,
                    "click_answers": _click_answers(get_db(), chat, events)})


def _click_answers(conn, chat, events: list[dict]) -> list[dict]:
    """The bot's answers to the clicks among ``events``, found by the message
    clicked even once it is deleted (the page's own answers are only those
    of the messages it shows): an answered click never reads "The bot did
    not respond" because its card is gone."""
    clicked = sorted({e["message_id"] for e in events if e["kind"] == "click" and "message_id" in e})
    wanted = {e["callback_query_id"] for e in events if e["kind"] == "click"}
    return [a for a in callbacks.answers_seen(conn, chat, clicked)
            if a["callback_query_id"] in wanted]


@bp.route("/chats/<int:user_id>/<int:bot_id>/inspect")
def inspect(user_id: int, bot_id: int) -> Response:
    conn = get_db()
    chat = _chat(user_id, bot_id)
    event_id, message_id = _int_arg("event_id", 1), _int_arg("message_id", 1)
    if event_id is not None:
        event = chat_events.find_event(conn, chat, event_id)
        if event is None:
            raise invalid("event_id", "No such event in this chat")
        answers = ([a for a in callbacks.answers_seen(conn, chat, [event["message_id"]])
                    if a["callback_query_id"] == event["callback_query_id"]]
                   if event["kind"] == "click" else [])
        return json_ok({"chat_id": chat["chat_id"], "event": event, "callback_answers": answers})
    if message_id is None:
        raise invalid("message_id", "Give message_id or event_id")
    if messages.find_message(conn, bot_id, chat, message_id) is None:
        raise invalid("message_id", "No such message in this chat")
    return json_ok({
        "chat_id": chat["chat_id"],
        "message": messages.find_shown(conn, bot_id, chat, message_id),
        "events": chat_events.events_of_message(conn, chat, message_id),
        "callback_answers": callbacks.answers_seen(conn, chat, [message_id]),
        "calls": calls_about(bot_id, chat["chat_id"], message_id),
    })


def calls_about(bot_id: int, chat_id: str, message_id: int) -> list[dict]:
    """The bot's calls in its call log (getBotCalls: at most its last 1,000,
    of 24 hours, with their detail: a re-send's mark) that sent message ``message_id`` of this chat (the message,
    or one of an album, in their result) or acted on it (their parameters
    name it: an edit, a deletion, failed ones too), oldest first, each
    ``{kind: "sent" | "changed", call}``."""
    found, cursor = [], None
    while True:
        page = calls.run("getBotCalls", {"bot_id": bot_id, "limit": CALL_LOG_PAGE, "detail": True,
                                         **({"cursor": cursor} if cursor else {})})
        for call in page["calls"]:
            kind = _relation(call, chat_id, message_id)
            if kind:
                found.append({"kind": kind, "call": call})
        cursor = page["next_cursor"]
        if cursor is None:
            return found[::-1]


def _relation(call: dict, chat_id: str, message_id: int) -> str | None:
    # A call too large to keep whole keeps a preview of each field (its chat_id too).
    params = call.get("params") or call.get("params_preview") or {}
    if params.get("chat_id") not in (None, chat_id):
        return None
    # A message too large for the record's bound is kept whole in its detail.
    result = call.get("result", call.get("result_whole"))
    sent = result if isinstance(result, list) else [result]
    if any(isinstance(m, dict) and m.get("message_id") == message_id
           and (m.get("chat") or {}).get("id") == chat_id for m in sent):
        return "sent" if call["method"].startswith("send") else "changed"
    named = params.get("message_ids")
    if params.get("message_id") == message_id or (isinstance(named, list)
                                                  and message_id in named):
        return "changed"
    return None


class ReadSchema(StrictSchema):
    message_id = Int(min=0, required=True)


@bp.route("/chats/<int:user_id>/<int:bot_id>/read", methods=["POST"])
def mark_read(user_id: int, bot_id: int) -> Response:
    body = parse_body(request, settings().upload_max_bytes)
    if body.invalid is not None:
        raise body.invalid
    params = load(ReadSchema(), body.params)
    chats.mark_read(get_db(), bot_id, user_id, params["message_id"])
    return json_ok(True)


@bp.route("/users/<int:user_id>/chats")
def user_chats(user_id: int) -> Response:
    logs.quiet_access_line()
    conn = get_db()
    bots.require_user(conn, user_id)
    version = chat_changes.user_chats_version(conn, user_id)
    if request.args.get("since") == version:
        return json_ok({"version": version, "changed": False})
    return json_ok({"version": version, "changed": True, "entries": [
        {"bot_id": e["bot"]["id"], "display_name": e["bot"]["display_name"],
         "state": e["state"], "preview": e["preview"],
         "date": e["last"]["date"] if e["last"] else None, "unread": e["unread"]}
        for e in chat_list(conn, user_id)]})


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
    return file_response(row, settings().data_dir)
