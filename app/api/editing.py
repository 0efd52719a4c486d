"""Editing and deleting the bot's own messages. The rules live in
app.domain.editing (and app.domain.media_messages for captions and media);
these handlers only parse and call. Edits and deletes count against the
general API limit only."""
from __future__ import annotations

from marshmallow import fields, validate

from app.api.files import FileId
from app.api.media import Caption
from app.api.registry import Call, api_method
from app.api.sending import TEXT_MAX_BYTES
from app.domain import editing, media_messages
from app.domain.cards import Card
from app.domain.keyboards import ReplyMarkup
from app.validation import ChatId, MessageId, ParseMode, Str, StrictSchema, Text

DELETE_MAX_IDS = 100


class MessageRefSchema(StrictSchema):
    chat_id = ChatId(required=True)
    message_id = MessageId(required=True)


class EditMessageTextSchema(MessageRefSchema):
    text = Text(min_bytes=1, max_bytes=TEXT_MAX_BYTES, required=True)
    reply_markup = ReplyMarkup()
    parse_mode = ParseMode()


class EditMessageCardSchema(MessageRefSchema):
    card = Card(required=True)
    reply_markup = ReplyMarkup()
    parse_mode = ParseMode()


class EditMessageCaptionSchema(MessageRefSchema):
    caption = Caption()
    reply_markup = ReplyMarkup()
    parse_mode = ParseMode()


class EditMessageMediaSchema(MessageRefSchema):
    media = FileId(required=True)
    type = Str(validate=[validate.OneOf(media_messages.MEDIA_TYPES, error="must be one of "
                                        + ", ".join(media_messages.MEDIA_TYPES))])
    caption = Caption()
    reply_markup = ReplyMarkup()


class EditMessageReplyMarkupSchema(MessageRefSchema):
    reply_markup = ReplyMarkup(required=True)


class DeleteMessagesSchema(StrictSchema):
    chat_id = ChatId(required=True)
    message_ids = fields.List(MessageId(), required=True, validate=[validate.Length(
        min=1, max=DELETE_MAX_IDS, error=f"must hold 1 to {DELETE_MAX_IDS} message ids")])


def _markup(params: dict):
    """An omitted reply_markup leaves the buttons; an empty keyboard removes them."""
    return params["reply_markup"] if "reply_markup" in params else editing.UNCHANGED


@api_method("editMessageText", EditMessageTextSchema())
def edit_message_text(call: Call) -> dict:
    p = call.params
    return editing.edit_message_text(call.conn, call.bot.id, p["chat_id"], p["message_id"],
                                     p["text"], _markup(p))


@api_method("editMessageCard", EditMessageCardSchema())
def edit_message_card(call: Call) -> dict:
    p = call.params
    return editing.edit_message_card(call.conn, call.bot.id, p["chat_id"], p["message_id"],
                                     p["card"], _markup(p))


@api_method("editMessageCaption", EditMessageCaptionSchema())
def edit_message_caption(call: Call) -> dict:
    p = call.params
    return media_messages.edit_message_caption(
        call.conn, call.bot.id, p["chat_id"], p["message_id"],
        p.get("caption", editing.UNCHANGED), _markup(p))


@api_method("editMessageMedia", EditMessageMediaSchema())
def edit_message_media(call: Call) -> dict:
    p = call.params
    return media_messages.edit_message_media(
        call.conn, call.bot.id, p["chat_id"], p["message_id"], p["media"], p.get("type"),
        p.get("caption", editing.UNCHANGED), _markup(p))


@api_method("editMessageReplyMarkup", EditMessageReplyMarkupSchema())
def edit_message_reply_markup(call: Call) -> dict:
    p = call.params
    return editing.edit_message_reply_markup(call.conn, call.bot.id, p["chat_id"],
                                             p["message_id"], p["reply_markup"])


@api_method("deleteMessage", MessageRefSchema())
def delete_message(call: Call) -> bool:
    p = call.params
    editing.delete_message(call.conn, call.bot.id, p["chat_id"], p["message_id"])
    return True


@api_method("deleteMessages", DeleteMessagesSchema())
def delete_messages(call: Call) -> bool:
    p = call.params
    editing.delete_messages(call.conn, call.bot.id, p["chat_id"], p["message_ids"])
    return True
