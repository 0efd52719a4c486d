"""Editing and deleting the bot's own messages. The rules live in
botsvc.domain.editing (and botsvc.domain.media_messages for captions and media);
these handlers only parse and call. Edits and deletes count against the
general API limit only."""
from __future__ import annotations

from marshmallow import fields, validate

from botsvc.api.registry import Call, api_method
from botsvc.api.sending import SEND_ERRORS
from botsvc.catalogue import results
from botsvc.catalogue.markup import Card, ReplyMarkup
from botsvc.catalogue.validation import (
    Caption,
    ChatId,
    FileId,
    MediaType,
    MessageId,
    MessageText,
    ParseMode,
    StrictSchema,
)
from botsvc.domain import editing, media_messages
from botsvc.errors import ErrorCode

DELETE_MAX_IDS = 100
# An edit needs the chat active and the message the bot's own.
EDIT_ERRORS = (*SEND_ERRORS, ErrorCode.MESSAGE_NOT_FOUND)
# Deleting the bot's own message stays allowed after Stop.
DELETE_ERRORS = (ErrorCode.CHAT_NOT_FOUND, ErrorCode.MESSAGE_NOT_FOUND)


class MessageRefSchema(StrictSchema):
    chat_id = ChatId(required=True)
    message_id = MessageId(required=True)


class EditMessageTextSchema(MessageRefSchema):
    text = MessageText(required=True)
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
    type = MediaType(metadata={"description": "default: the message's present type"})
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


@api_method("editMessageText", EditMessageTextSchema(), result=results.Message,
            errors=EDIT_ERRORS, reaction="edit",
            summary="Replace the text of the bot's text message")
def edit_message_text(call: Call) -> dict:
    p = call.params
    return editing.edit_message_text(call.conn, call.bot.id, p["chat_id"], p["message_id"],
                                     p["text"], _markup(p))


@api_method("editMessageCard", EditMessageCardSchema(), result=results.Message,
            errors=EDIT_ERRORS, reaction="edit",
            summary="Replace the card of the bot's card message")
def edit_message_card(call: Call) -> dict:
    p = call.params
    return editing.edit_message_card(call.conn, call.bot.id, p["chat_id"], p["message_id"],
                                     p["card"], _markup(p))


@api_method("editMessageCaption", EditMessageCaptionSchema(), result=results.Message,
            errors=EDIT_ERRORS, reaction="edit",
            summary="Set or remove (\"\") the caption of a media message")
def edit_message_caption(call: Call) -> dict:
    p = call.params
    return media_messages.edit_message_caption(
        call.conn, call.bot.id, p["chat_id"], p["message_id"],
        caption=p.get("caption", editing.UNCHANGED), reply_markup=_markup(p))


@api_method("editMessageMedia", EditMessageMediaSchema(), result=results.Message,
            errors=EDIT_ERRORS, reaction="edit",
            summary="Replace the file of a media message (a file_id)")
def edit_message_media(call: Call) -> dict:
    p = call.params
    return media_messages.edit_message_media(
        call.conn, call.bot.id, p["chat_id"], p["message_id"], p["media"], type=p.get("type"),
        caption=p.get("caption", editing.UNCHANGED), reply_markup=_markup(p))


@api_method("editMessageReplyMarkup", EditMessageReplyMarkupSchema(),
            result=results.Message, errors=EDIT_ERRORS, reaction="edit",
            summary="Replace or remove (empty inline_keyboard) a message's buttons")
def edit_message_reply_markup(call: Call) -> dict:
    p = call.params
    return editing.edit_message_reply_markup(call.conn, call.bot.id, p["chat_id"],
                                             p["message_id"], p["reply_markup"])


@api_method("deleteMessage", MessageRefSchema(), result=results.TRUE, errors=DELETE_ERRORS,
            reaction="delete", summary="Delete one of the bot's messages (again: still true)")
def delete_message(call: Call) -> bool:
    p = call.params
    editing.delete_message(call.conn, call.bot.id, p["chat_id"], p["message_id"])
    return True


@api_method("deleteMessages", DeleteMessagesSchema(), result=results.TRUE,
            errors=DELETE_ERRORS, reaction="delete",
            summary="Delete 1 to 100 of the bot's messages in one chat")
def delete_messages(call: Call) -> bool:
    p = call.params
    editing.delete_messages(call.conn, call.bot.id, p["chat_id"], p["message_ids"])
    return True
