"""What the methods answer: marshmallow schemas of the resources the contract
defines, and of the operator API's answers, named by the catalogue
entries as their ``result``. They describe; the domain renders. The suite
checks every answer against them through the OpenAPI document, so a field
the domain adds or drops without changing them here fails a test.

Every object is closed (``unknown = RAISE``: no undeclared field); a field
that is always present is ``required``.
"""
from __future__ import annotations

from marshmallow import RAISE, Schema, fields, validate

from app.contract import CHAT_ID, FILE_ID, FILE_KINDS, SHA256, ecma
from app.validation import CardSchema, InlineKeyboardSchema, OneOf

MESSAGE_TYPES = ("text", "photo", "video", "animation", "audio", "voice", "document", "card")
MEMBERSHIP_STATUSES = ("active", "stopped")
BROADCAST_STATUSES = ("queued", "running", "completed", "cancelled")
RECIPIENT_STATUSES = ("queued", "sent", "failed", "cancelled")
BOT_TOKEN = r"^[1-9][0-9]*:[A-Za-z0-9_-]{43}$"


def Pattern(regex: str, **kwargs) -> fields.String:
    return fields.String(validate=validate.Regexp(regex), **kwargs)


TRUE = fields.Constant(True, metadata={"description": "always true"})


def ListOf(schema, **kwargs) -> fields.List:
    return fields.List(fields.Nested(schema), **kwargs)


class Result(Schema):
    class Meta:
        unknown = RAISE


class Bot(Result):
    id = fields.Integer(required=True)
    is_bot = fields.Constant(True, required=True)
    username = fields.String(required=True)
    display_name = fields.String(required=True)
    description = fields.String(required=True)


class ListedBot(Bot):
    disabled = fields.Boolean(required=True)


class Chat(Result):
    id = Pattern(ecma(CHAT_ID), required=True)
    type = fields.Constant("private", required=True)
    status = OneOf(MEMBERSHIP_STATUSES, required=True)
    started_at = fields.Integer(required=True)
    stopped_at = fields.Integer(metadata={"description": "while stopped"})


class MessageChat(Result):
    id = Pattern(ecma(CHAT_ID), required=True)
    type = fields.Constant("private", required=True)


class MessageMedia(Result):
    file_id = Pattern(ecma(FILE_ID), required=True)
    kind = OneOf(FILE_KINDS, required=True)
    mime_type = fields.String(required=True)
    file_size = fields.Integer(required=True)
    file_name = fields.String()
    width = fields.Integer()
    height = fields.Integer()
    duration = fields.Float(metadata={"description": "seconds, 3 decimals"})


class Message(Result):
    message_id = fields.Integer(required=True)
    chat = fields.Nested(MessageChat, required=True)
    date = fields.Integer(required=True)
    type = OneOf(MESSAGE_TYPES, required=True)
    from_bot = fields.Boolean(required=True, metadata={"description": "true for messages "
                                                                      "the bot sent"})
    text = fields.String()
    caption = fields.String()
    media = fields.Nested(MessageMedia)
    card = fields.Nested(CardSchema)
    reply_markup = fields.Nested(InlineKeyboardSchema)
    reply_to_message_id = fields.Integer()
    media_group_id = fields.String()
    edit_date = fields.Integer()


MESSAGES = ListOf(Message)


class Membership(Result):
    chat_id = Pattern(ecma(CHAT_ID), required=True)
    status = OneOf(MEMBERSHIP_STATUSES, required=True)
    reason = OneOf(("blocked",))
    start_parameter = fields.String()


class CallbackQuery(Result):
    id = Pattern(r"^[0-9a-f]{32}$", required=True)
    chat_id = Pattern(ecma(CHAT_ID), required=True)
    message_id = fields.Integer(required=True)
    data = fields.String(required=True)


class Update(Result):
    update_id = fields.Integer(required=True)
    message = fields.Nested(Message)
    membership = fields.Nested(Membership)
    callback_query = fields.Nested(CallbackQuery)


class WebhookInfo(Result):
    url = fields.String(required=True, metadata={"description": "empty while polling"})
    pending_update_count = fields.Integer(required=True)
    last_error = fields.String()
    last_error_at = fields.Integer()
    last_success_at = fields.Integer()


class File(Result):
    file_id = Pattern(ecma(FILE_ID), required=True)
    kind = OneOf(FILE_KINDS, required=True)
    mime_type = fields.String(required=True)
    file_name = fields.String(required=True)
    file_size = fields.Integer(required=True)
    sha256 = Pattern(ecma(SHA256), required=True)
    width = fields.Integer()
    height = fields.Integer()
    duration = fields.Float(metadata={"description": "seconds, 3 decimals"})
    pages = fields.Integer()


class FileWithLink(File):
    download_url = fields.String(required=True, metadata={
        "description": "signed link, a bearer capability valid one hour"})
    expires_at = fields.Integer(required=True)


def NextCursor() -> fields.String:
    return fields.String(required=True, allow_none=True,
                         metadata={"description": "null on the last page"})


class Subscriber(Result):
    chat_id = Pattern(ecma(CHAT_ID), required=True)
    started_at = fields.Integer(required=True)


class SubscribersPage(Result):
    subscribers = ListOf(Subscriber, required=True)
    next_cursor = NextCursor()


class BroadcastCounts(Result):
    queued = fields.Integer(required=True)
    sent = fields.Integer(required=True)
    failed = fields.Integer(required=True)
    cancelled = fields.Integer(required=True)


class Broadcast(Result):
    broadcast_id = Pattern(r"^bc_[0-9a-f]{32}$", required=True)
    status = OneOf(BROADCAST_STATUSES, required=True)
    counts = fields.Nested(BroadcastCounts, required=True)
    created_at = fields.Integer(required=True)
    completed_at = fields.Integer(required=True, allow_none=True)


class Recipient(Result):
    chat_id = Pattern(ecma(CHAT_ID), required=True)
    status = OneOf(RECIPIENT_STATUSES, required=True)
    message_id = fields.Integer(metadata={"description": "when sent"})
    last_error = fields.String(metadata={"description": "the error_code, when failed"})


class RecipientsPage(Result):
    recipients = ListOf(Recipient, required=True)
    next_cursor = NextCursor()


# -- the operator API -----------------------------------------------------------

class CreatedBot(Result):
    bot = fields.Nested(Bot, required=True)
    token = Pattern(BOT_TOKEN, required=True, metadata={"description": "shown only once"})


class Token(Result):
    token = Pattern(BOT_TOKEN, required=True)


class CreatedUser(Result):
    user_id = fields.Integer(required=True)


class StartedChat(Result):
    chat_id = Pattern(ecma(CHAT_ID), required=True)
    update_id = fields.Integer(required=True)


class ClickedButton(Result):
    callback_query_id = Pattern(r"^[0-9a-f]{32}$", required=True)


class CallbackAnswer(Result):
    callback_query_id = Pattern(r"^[0-9a-f]{32}$", required=True)
    message_id = fields.Integer(required=True)
    data = fields.String(required=True)
    text = fields.String(required=True, allow_none=True)
    show_alert = fields.Boolean(required=True)
    date = fields.Integer(required=True)


class UserChat(Result):
    chat_id = Pattern(ecma(CHAT_ID), required=True)
    status = OneOf(MEMBERSHIP_STATUSES, required=True)
    messages = ListOf(Message, required=True, metadata={
        "description": "as the user sees them now: edits applied, deleted ones gone"})
    callback_answers = ListOf(CallbackAnswer, required=True)


# -- the testing tools ----------------------------------------------------------

class ClockReading(Result):
    now = fields.Integer(required=True, metadata={"description": "the service's clock, Unix seconds"})
    offset = fields.Integer(required=True, metadata={"description": "seconds ahead of the machine"})


class WebhookDelivery(Result):
    update_id = fields.Integer(required=True)
    attempt = fields.Integer(required=True)
    started_at = fields.Integer(required=True)
    duration_ms = fields.Integer(required=True)
    http_status = fields.Integer(metadata={"description": "when the target answered"})
    error = fields.String(metadata={"description": "when the attempt failed"})


class WebhookDeliveriesPage(Result):
    deliveries = ListOf(WebhookDelivery, required=True)
    next_cursor = NextCursor()
