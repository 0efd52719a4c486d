"""Media messages: the one send path of the six single-media methods (and of
their broadcasts), media groups, caption and media edits, and the simulated
user's media messages.

Which file kinds each message type takes (the contract's sending rules):
photo takes photos; voice and audio take audio; video takes ordinary video;
animation takes the MP4s made from GIFs; document takes any clean file. A
file of another kind is INVALID_PARAMETER with reason ``type_mismatch``.

Every function here takes plain values and a connection, and runs inside the
caller's write transaction (the dispatcher's, the broadcast worker's) or opens
its own.
"""
from __future__ import annotations

import secrets
import sqlite3

from botsvc.contract import FILE_KINDS, MEDIA_TYPES
from botsvc.db import transaction
from botsvc.domain import files, messages
from botsvc.domain.chats import check_active, require_active_chat, user_chat, user_message_update
from botsvc.domain.editing import (
    UNCHANGED,
    apply_edit,
    check_markup_allowed,
    require_editable_chat,
    require_type,
)
from botsvc.domain.files import StoredUpload
from botsvc.errors import Reason, invalid
from botsvc.media import MediaConfig

GROUP_TYPES = ("photo", "video")
KINDS_FOR_TYPE = {
    "photo": ("photo",),
    "voice": ("audio",),
    "audio": ("audio",),
    "video": ("video",),
    "animation": ("animation",),
    "document": FILE_KINDS,
}
# The message type a user's file arrives as, unless the user says otherwise.
TYPE_FOR_KIND = {"photo": "photo", "video": "video", "animation": "animation",
                 "audio": "audio", "document": "document"}


def check_kind(type: str, kind: str, field: str, path: str | None = None) -> None:
    if kind in KINDS_FOR_TYPE[type]:
        return
    allowed = " or ".join(KINDS_FOR_TYPE[type])
    raise invalid(field, f"{path or field}: a file of kind {kind} cannot be sent as {type}"
                         f" (it needs {allowed})", reason=Reason.TYPE_MISMATCH,
                  **({"path": path} if path else {}))


def _content(file: sqlite3.Row, caption: str | None, reply_markup: dict | None = None) -> dict:
    # An empty caption is no caption: the Message then has no caption field.
    return {"caption": caption or None, "media": files.media_of(file),
            "reply_markup": reply_markup}


def usable_file(conn: sqlite3.Connection, bot_id: int, type: str, field: str,
                file_id: str, path: str | None = None) -> sqlite3.Row:
    """A clean file of this bot whose kind a message of ``type`` accepts."""
    file = files.require_clean_file(conn, bot_id, file_id, field, path)
    check_kind(type, file["kind"], field, path)
    return file


def send_media(conn: sqlite3.Connection, bot_id: int, chat_id: str, type: str, field: str,
               media: str | StoredUpload, *, quota: int, caption: str | None = None,
               reply_markup: dict | None = None,
               reply_to_message_id: int | None = None) -> dict:
    """The bot sends one media message. ``media`` is a file_id, or an upload
    already processed and stored (a direct multipart upload), which gets its
    file row here, within the quota, in the caller's transaction."""
    chat = require_active_chat(conn, bot_id, chat_id)
    if isinstance(media, StoredUpload):
        check_kind(type, media.kind, field)
        file = files.record_file(conn, bot_id, media, quota, field)
    else:
        file = usable_file(conn, bot_id, type, field, media)
    return messages.send_message(conn, bot_id, chat, type=type,
                                 content=_content(file, caption, reply_markup),
                                 reply_to_message_id=reply_to_message_id)


def send_media_group(conn: sqlite3.Connection, bot_id: int, chat_id: str,
                     items: list[dict]) -> list[dict]:
    """2 to 10 photos and videos as one album: one message each, one shared
    ``media_group_id``, no buttons and no reply (the contract's rule). All or
    nothing: any bad item fails the whole call."""
    chat = require_active_chat(conn, bot_id, chat_id)
    found = []
    for index, item in enumerate(items):
        file = usable_file(conn, bot_id, item["type"], "media", item["media"],
                           f"media.{index}.media")
        found.append((item, file))
    group_id = secrets.token_hex(16)
    return [messages.send_message(conn, bot_id, chat, type=item["type"],
                                  content=_content(file, item.get("caption")),
                                  media_group_id=group_id)
            for item, file in found]


def edit_message_caption(conn: sqlite3.Connection, bot_id: int, chat_id: str,
                         message_id: int, *, caption=UNCHANGED, reply_markup=UNCHANGED) -> dict:
    """A media message's caption (an empty one removes it) and buttons."""
    chat = require_editable_chat(conn, bot_id, chat_id)
    row = messages.own_message(conn, bot_id, chat, message_id)
    require_type(row, MEDIA_TYPES, "editMessageCaption")
    check_markup_allowed(row, reply_markup)
    changes = {} if caption is UNCHANGED else {"caption": caption or None}
    return apply_edit(conn, chat, row, changes, reply_markup=reply_markup)


def edit_message_media(conn: sqlite3.Connection, bot_id: int, chat_id: str, message_id: int,
                       file_id: str, *, type: str | None = None, caption=UNCHANGED,
                       reply_markup=UNCHANGED) -> dict:
    """Replace a media message's file (and type). Text and card messages never
    become media; a media-group member stays a photo or a video."""
    chat = require_editable_chat(conn, bot_id, chat_id)
    row = messages.own_message(conn, bot_id, chat, message_id)
    require_type(row, MEDIA_TYPES, "editMessageMedia")
    new_type = type or row["type"]
    if row["media_group_id"] is not None and new_type not in GROUP_TYPES:
        raise invalid("type", f"A media group member can only become a photo or a video,"
                              f" not {new_type}")
    check_markup_allowed(row, reply_markup)
    file = usable_file(conn, bot_id, new_type, "media", file_id)
    changes = {"media": files.media_of(file)}
    if caption is not UNCHANGED:
        changes["caption"] = caption or None
    return apply_edit(conn, chat, row, changes, reply_markup=reply_markup, type=new_type)


# -- the simulated user's side (operator API) ---------------------------------------

def user_send_media_file(conn: sqlite3.Connection, config: MediaConfig, data_dir: str,
                         quota: int, bot_id: int, user_id: int, src_path: str, file_name: str,
                         declared_mime: str | None, *, caption: str | None = None,
                         type: str | None = None) -> dict:
    """A user sends a file (already in quarantine) to the bot: the checks that
    need no file, then the bots' upload pipeline outside any transaction,
    then ``user_send_media``. Used by userSendMedia (and so ``botsvc user-send-media``)."""
    check_active(user_chat(conn, bot_id, user_id))
    files.check_quota_room(conn, bot_id, quota, "file")
    stored = files.process_and_store(config, data_dir, src_path, file_name, declared_mime, "file")
    with files.discarded_on_error(stored):
        return user_send_media(conn, bot_id, user_id, stored, quota=quota, caption=caption,
                               type=type)


def user_send_media(conn: sqlite3.Connection, bot_id: int, user_id: int,
                    stored: StoredUpload, *, quota: int, caption: str | None = None,
                    type: str | None = None) -> dict:
    """A user sends a processed file to the bot. The file row belongs to the
    bot (counted in its quota), so the bot may getFile and re-send it; the
    bot gets an update with the message. ``type`` defaults from the kind."""
    with transaction(conn):
        chat = user_chat(conn, bot_id, user_id)
        check_active(chat)
        type = type or TYPE_FOR_KIND[stored.kind]
        check_kind(type, stored.kind, "file")
        file = files.record_file(conn, bot_id, stored, quota, "file")
        message = messages.insert_message(conn, bot_id, chat, from_bot=False, type=type,
                                          content=_content(file, caption))
        user_message_update(conn, bot_id, chat, message)
    return message
