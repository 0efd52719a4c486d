"""The media send methods: sendPhoto, sendVoice, sendVideo, sendAudio,
sendDocument, sendAnimation (a file_id or, in a multipart request, the file
itself) and sendMediaGroup (file_ids only). The rules live in
botsvc.domain.media_messages; these only parse, prepare and call.

A direct upload is the same work as uploadFile (same pipeline, same quota,
and the upload rate as well as the send rate), done in ``prepare`` outside
the write transaction, after the cheap refusals: a chat that cannot receive
the message, a reply target that does not exist or a full quota cost no
transcode. A file_id needs no preparation (broadcast deliveries rely on it).
"""
from __future__ import annotations

from marshmallow import fields, validate

from botsvc.api.files import store_uploaded
from botsvc.api.registry import Call, api_method
from botsvc.api.sending import REPLY_ERRORS, SEND_ERRORS
from botsvc.catalogue import results
from botsvc.catalogue.markup import ReplyMarkup
from botsvc.catalogue.validation import (
    Caption,
    ChatId,
    FileId,
    MediaInput,
    MessageId,
    OneOf,
    ParseMode,
    StrictSchema,
    UploadedFile,
)
from botsvc.domain import files, messages
from botsvc.domain.chats import require_active_chat
from botsvc.domain.files import StoredUpload
from botsvc.domain.media_messages import GROUP_TYPES, send_media, send_media_group, usable_file
from botsvc.errors import ErrorCode
from botsvc.limits import SEND

GROUP_MIN, GROUP_MAX = 2, 10
# method name -> message type; each method's media field is named as its type.
SINGLE_MEDIA_METHODS = {"sendPhoto": "photo", "sendVoice": "voice", "sendVideo": "video",
                        "sendAudio": "audio", "sendDocument": "document",
                        "sendAnimation": "animation"}


class SendMediaSchema(StrictSchema):
    chat_id = ChatId(required=True)
    caption = Caption()
    parse_mode = ParseMode()
    reply_markup = ReplyMarkup()
    reply_to_message_id = MessageId()


def _prepare(field: str):
    def prepare(call: Call) -> StoredUpload | None:
        media = call.params[field]
        if not isinstance(media, UploadedFile):
            return None
        p = call.params
        chat = require_active_chat(call.conn, call.bot.id, p["chat_id"])
        if p.get("reply_to_message_id") is not None:
            messages.require_reply_target(call.conn, call.bot.id, chat, p["reply_to_message_id"])
        return store_uploaded(call, media, field)
    return prepare


def _handler(type: str):
    def handler(call: Call) -> dict:
        p = call.params
        with files.discarded_on_error(call.prepared):
            return send_media(call.conn, call.bot.id, p["chat_id"], type, type,
                              call.prepared or p[type],
                              quota=call.settings.storage_quota_bytes,
                              caption=p.get("caption"), reply_markup=p.get("reply_markup"),
                              reply_to_message_id=p.get("reply_to_message_id"))
    return handler


def _check_references(type: str):
    def check_references(conn, bot_id: int, params: dict) -> None:
        media = params.get(type)
        if isinstance(media, str):
            usable_file(conn, bot_id, type, type, media)
    return check_references


for _method, _type in SINGLE_MEDIA_METHODS.items():
    _schema = SendMediaSchema.from_dict({_type: MediaInput(required=True)},
                                        name=f"{_method[0].upper()}{_method[1:]}Schema")
    api_method(_method, _schema(), buckets=(SEND,), prepare=_prepare(_type),
               check_references=_check_references(_type), result=results.Message, reaction="send",
               errors=(*REPLY_ERRORS, ErrorCode.DEPENDENCY_UNAVAILABLE),
               summary=f"Send a {_type}: a file_id of a clean file of this bot, or (multipart)"
                       " the file itself")(_handler(_type))


class MediaGroupItemSchema(StrictSchema):
    type = OneOf(GROUP_TYPES, required=True)
    media = FileId(required=True)
    caption = Caption()


class SendMediaGroupSchema(StrictSchema):
    chat_id = ChatId(required=True)
    media = fields.List(
        fields.Nested(MediaGroupItemSchema), required=True,
        error_messages={"invalid": "must be an array of media items"},
        validate=[validate.Length(min=GROUP_MIN, max=GROUP_MAX,
                                  error=f"must hold {GROUP_MIN} to {GROUP_MAX} items")])


@api_method("sendMediaGroup", SendMediaGroupSchema(), buckets=(SEND,),
            result=results.MESSAGES, errors=SEND_ERRORS, reaction="send",
            summary="Send 2 to 10 photos and videos (file_ids) as one album")
def send_media_group_method(call: Call) -> list[dict]:
    p = call.params
    return send_media_group(call.conn, call.bot.id, p["chat_id"], p["media"])
