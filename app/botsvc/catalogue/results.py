"""What the methods answer: marshmallow schemas of the resources the contract
defines, and of the operator API's answers, named by the catalogue
entries as their ``result``. They describe; the domain renders. The suite
checks every answer against them through the OpenAPI document, so a field
the domain adds or drops without changing them here fails a test.
Long because it is the one list of every answer's shape, /v2's and the
operator API's side by side: they share parts (Chat, Message, cursors).

Every object is closed (``unknown = RAISE``: no undeclared field); a field
that is always present is ``required``.
"""
from __future__ import annotations

from marshmallow import RAISE, Schema, fields, validate

from botsvc.catalogue.markup import CardSchema, InlineKeyboardSchema
from botsvc.catalogue.validation import OneOf
from botsvc.contract import (
    CALL_LOG_BODY_MAX_BYTES,
    CALL_LOG_PREVIEW_MAX_BYTES,
    CHAT_ID,
    FILE_ID,
    FILE_KINDS,
    SHA256,
    ecma,
)
from botsvc.errors import ErrorCode

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


class ExportedChat(Result):
    file_name = fields.String(required=True, metadata={
        "description": "a name for the file: test_<bot>_conversation.py, or .json"})
    content = fields.String(required=True, metadata={"description": "the file's UTF-8 text"})


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
        "description": "as the user sees them now (edits applied, deleted ones gone): the"
                       " newest `limit` of them, older than before_message_id when given,"
                       " oldest first"})
    callback_answers = ListOf(CallbackAnswer, required=True, metadata={
        "description": "the answers to clicks on the messages of this page, in the order"
                       " they were given"})
    has_more = fields.Boolean(required=True, metadata={
        "description": "whether older messages exist (ask again with before_message_id ="
                       " the first message_id of this page)"})


# -- the testing tools ----------------------------------------------------------

class ClockReading(Result):
    now = fields.Integer(required=True, metadata={"description": "the service's clock, Unix seconds"})
    offset = fields.Integer(required=True, metadata={"description": "seconds ahead of the machine"})


class WebhookExchangeSide(Result):
    headers = fields.Dict(keys=fields.String(), values=fields.String(), required=True, metadata={
        "description": "name to value, in order while they fit in 4 KiB (a repeated name"
        " joined with \", \"); the secret-token header, credentials and cookies redacted"})
    body = fields.String(required=True, metadata={
        "description": "the first 4 KiB, as UTF-8 text; the secret token redacted"})
    body_truncated = fields.Boolean(required=True, metadata={
        "description": "the body was longer than 4 KiB, or not read to its end"})


class WebhookDelivery(Result):
    update_id = fields.Integer(required=True)
    attempt = fields.Integer(required=True)
    started_at = fields.Integer(required=True)
    duration_ms = fields.Integer(required=True)
    http_status = fields.Integer(metadata={"description": "when the target answered"})
    error = fields.String(metadata={"description": "when the attempt failed"})
    request = fields.Nested(WebhookExchangeSide, metadata={
        "description": "with detail: what was sent (no headers when the attempt stopped"
        " before sending)"})
    response = fields.Nested(WebhookExchangeSide, metadata={
        "description": "with detail, when an answer came"})
    replay_of = fields.Integer(metadata={
        "description": "when the update was a replay (redeliverUpdate): the update it repeats"})


class WebhookDeliveriesPage(Result):
    deliveries = ListOf(WebhookDelivery, required=True)
    next_cursor = NextCursor()


class UpdateReplay(Result):
    update_id = fields.Integer(required=True, metadata={"description": "the new update's"})
    replay_of = fields.Integer(required=True, metadata={"description": "the update it repeats"})


class ResentCall(Result):
    method = fields.String(required=True)
    sent_as = OneOf(("json", "form"), required=True, metadata={
        "description": "form when the call's kept values were a form's text"})
    ok = fields.Boolean(required=True)
    http_status = fields.Integer(required=True)
    request_id = fields.String(required=True, metadata={
        "description": "the new call's X-Request-Id (its record in the call log has it)"})
    result = fields.Raw(metadata={"description": "a success's result"})
    error_code = OneOf(tuple(code.value for code in ErrorCode),
                       metadata={"description": "a failure's"})
    description = fields.String(metadata={"description": "a failure's"})
    parameters = fields.Dict(metadata={"description": "a failure's"})


# -- the bot's call log (getBotCalls) -------------------------------------------

class InjectedIntoCall(Result):
    error_code = OneOf(tuple(code.value for code in ErrorCode), metadata={
        "description": "the error the fault answered with; absent for a delay alone"})
    delay_ms = fields.Integer(metadata={"description": "how long the call was held"})


class BotCall(Result):
    call_id = fields.Integer(required=True, metadata={
        "description": "positive, increasing in the order the records were written"})
    date = fields.Integer(required=True, metadata={"description": "when the call arrived"})
    method = fields.String(required=True, metadata={
        "description": "as requested: an unknown method under its requested name"})
    ok = fields.Boolean(required=True)
    http_status = fields.Integer(required=True)
    duration_ms = fields.Float(required=True)
    request_id = fields.String(required=True, metadata={"description": "the call's X-Request-Id"})
    error_code = OneOf(tuple(code.value for code in ErrorCode),
                       metadata={"description": "a failure's"})
    description = fields.String(metadata={"description": "a failure's"})
    idempotency_key = fields.String()
    replayed = fields.Boolean(required=True, metadata={
        "description": "the answer came from a stored Idempotency-Key"})
    params = fields.Dict(metadata={
        "description": "the parameters as sent (form fields as text, a file part as "
                       "{file_name, size}); absent when the body was not read, or when over "
                       "the bound"})
    result = fields.Raw(metadata={"description": "a success's result; absent when over the "
                                                 "bound"})
    # A boolean, not a constant: a client generator breaks on an optional const.
    truncated = fields.Boolean(validate=validate.Equal(True), metadata={
        "description": f"true when params or result was left out: its compact JSON is over "
                       f"{CALL_LOG_BODY_MAX_BYTES} bytes; absent otherwise"})
    # Only with getBotCalls' detail: true (the default record keeps the
    # contract's fields and no others).
    error_parameters = fields.Dict(metadata={
        "description": "detail only: the failure's parameters (field, path, retry_after, "
                       "injected...), when it had any"})
    injected = fields.Nested(InjectedIntoCall, metadata={
        "description": "detail only: the fault or delay the testing tools injected into "
                       "this call"})
    params_preview = fields.Dict(keys=fields.String(), values=fields.String(), metadata={
        "description": f"detail only, when params was left out for size: each field as its "
                       f"text (a string's own, else its compact JSON), cut to "
                       f"{CALL_LOG_PREVIEW_MAX_BYTES} bytes"})
    cut_fields = fields.List(fields.String(), metadata={
        "description": "detail only, with params_preview: the fields cut in it"})
    resent_from = fields.Integer(metadata={
        "description": "detail only: this call is the testing tools' re-send (resendCall) of "
                       "that call of the log, not the bot's own"})
    result_whole = fields.Raw(metadata={
        "description": "detail only, when result was left out for size and is the Message (or "
                       "Messages) the bot sent or edited: the result whole"})


class BotCallsPage(Result):
    calls = ListOf(BotCall, required=True)
    next_cursor = NextCursor()
    empty_polls = fields.Integer(required=True, metadata={
        "description": "getUpdates that succeeded with no update (not recorded as calls), "
                       "since the bot was created"})
    last_poll_at = fields.Integer(required=True, allow_none=True, metadata={
        "description": "the date of the bot's most recent getUpdates; null before the first"})
