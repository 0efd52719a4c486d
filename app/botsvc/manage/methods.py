"""Operator methods: thin wrappers of the domain functions the CLI also uses."""
from __future__ import annotations

from flask import current_app
from marshmallow import ValidationError

from botsvc.api.registry import METHODS
from botsvc.catalogue import results
from botsvc.catalogue.markup import CALLBACK_DATA_MAX_BYTES
from botsvc.catalogue.validation import (
    Bool,
    Caption,
    FilePart,
    Int,
    MediaType,
    MessageId,
    MessageText,
    Pattern,
    Str,
    StrictSchema,
    Text,
)
from botsvc.contract import START_PARAMETER, USER_CHAT_DEFAULT_LIMIT, USER_CHAT_MAX_LIMIT
from botsvc.domain import bots, chats, media_messages
from botsvc.errors import ErrorCode
from botsvc.manage.dispatch import operator_method
from botsvc.manage.waiting import WaitMs, waited

USERNAME = r"^[a-z0-9_]{2,29}bot\Z"


class CreateBotSchema(StrictSchema):
    username = Pattern(USERNAME, "username must be 5 to 32 of a-z, 0-9, _ and end in 'bot'",
                       required=True)
    display_name = Text(min_bytes=1, max_bytes=128)
    description = Text(max_bytes=512)


def _api_method_name(value: str) -> str:
    if value not in METHODS:
        raise ValidationError("must be the name of a /v2 method")
    return value


def ApiMethodName(**kwargs) -> Str:
    """The name of a /v2 method (injectFault, getBotCalls)."""
    return Str(validate=[_api_method_name], **kwargs)


class BotIdSchema(StrictSchema):
    bot_id = Int(min=1, required=True)


class SetBotDisabledSchema(BotIdSchema):
    disabled = Bool(required=True)


class SetPlatformDisabledSchema(StrictSchema):
    disabled = Bool(required=True)


class CreateUserSchema(StrictSchema):
    display_name = Text(max_bytes=128)


class UserBotSchema(StrictSchema):
    user_id = Int(min=1, required=True)
    bot_id = Int(min=1, required=True)


class UserStartSchema(UserBotSchema):
    start_parameter = Pattern(START_PARAMETER,
                              "start_parameter must be 1 to 64 ASCII letters, digits, _ or -")


class UserSendMessageSchema(UserBotSchema):
    text = MessageText(required=True)
    reply_to_message_id = MessageId()


# A user acting in a chat: it must exist, and (to message the bot) be active.
CHAT_ERRORS = (ErrorCode.CHAT_NOT_FOUND,)
ACTIVE_CHAT_ERRORS = (*CHAT_ERRORS, ErrorCode.BOT_NOT_STARTED, ErrorCode.BOT_BLOCKED)


@operator_method("createBot", CreateBotSchema(), result=results.CreatedBot,
                 summary="Create a bot and its first token (shown only once)")
def create_bot(conn, p):
    bot, token = bots.create_bot(conn, p["username"], display_name=p.get("display_name"),
                                 description=p.get("description"))
    return {"bot": bot, "token": token}


@operator_method("rotateToken", BotIdSchema(), result=results.Token,
                 summary="Issue a new token; the old one stops working at once")
def rotate_token(conn, p):
    return {"token": bots.rotate_token(conn, p["bot_id"])}


@operator_method("setBotDisabled", SetBotDisabledSchema(), result=results.TRUE,
                 summary="Disable or re-enable a bot (BOT_DISABLED on all its calls)")
def set_bot_disabled(conn, p):
    bots.set_bot_disabled(conn, p["bot_id"], p["disabled"])
    return True


@operator_method("setPlatformDisabled", SetPlatformDisabledSchema(), result=results.TRUE,
                 summary="Disable or re-enable the whole platform (PLATFORM_DISABLED)")
def set_platform_disabled(conn, p):
    bots.set_platform_disabled(conn, p["disabled"])
    return True


@operator_method("listBots", result=results.ListOf(results.ListedBot),
                 summary="Every bot, with its disabled switch")
def list_bots(conn, p):
    return bots.list_bots(conn)


@operator_method("createUser", CreateUserSchema(), result=results.CreatedUser,
                 summary="Create a simulated messenger user")
def create_user(conn, p):
    return {"user_id": bots.create_user(conn, p.get("display_name"))}


@operator_method("userStart", UserStartSchema(), result=results.StartedChat,
                 summary="The user presses Start for the bot")
def user_start(conn, p):
    return chats.user_start(conn, p["bot_id"], p["user_id"], p.get("start_parameter"))


@operator_method("userStop", UserBotSchema(), result=results.TRUE, errors=CHAT_ERRORS,
                 summary="The user stops the bot (nothing changes if not active)")
def user_stop(conn, p):
    chats.user_stop(conn, p["bot_id"], p["user_id"])
    return True


@operator_method("userBlock", UserBotSchema(), result=results.TRUE, errors=CHAT_ERRORS,
                 summary="The user blocks the bot")
def user_block(conn, p):
    chats.user_block(conn, p["bot_id"], p["user_id"])
    return True


@operator_method("userSendMessage", UserSendMessageSchema(), result=results.Message,
                 errors=(*ACTIVE_CHAT_ERRORS, ErrorCode.MESSAGE_NOT_FOUND),
                 summary="The user sends a text (/start [param] and /stop act as such)")
def user_send_message(conn, p):
    return chats.user_send_message(conn, p["bot_id"], p["user_id"], p["text"],
                                   p.get("reply_to_message_id"))


class UserClickButtonSchema(UserBotSchema):
    message_id = MessageId(required=True)
    callback_data = Text(min_bytes=1, max_bytes=CALLBACK_DATA_MAX_BYTES, required=True)


@operator_method("userClickButton", UserClickButtonSchema(), result=results.ClickedButton,
                 errors=(*ACTIVE_CHAT_ERRORS, ErrorCode.MESSAGE_NOT_FOUND),
                 summary="The user clicks a callback button on a bot's message")
def user_click_button(conn, p):
    return chats.user_click_button(conn, p["bot_id"], p["user_id"], p["message_id"],
                                   p["callback_data"])


class UserGetChatSchema(UserBotSchema):
    limit = Int(min=1, max=USER_CHAT_MAX_LIMIT, load_default=USER_CHAT_DEFAULT_LIMIT,
                metadata={"description": "how many messages: the newest ones (older than"
                                         " before_message_id when given)"})
    before_message_id = MessageId(metadata={
        "description": "a message of this chat (a deleted one too): the page ends just"
                       " before it"})
    wait_ms = WaitMs("the page holds a message from the bot above wait_after_message_id")
    wait_after_message_id = Int(min=0, load_default=0, metadata={
        "description": "with wait_ms: the newest message_id the caller has seen (0: none)"})


@operator_method("userGetChat", UserGetChatSchema(), result=results.UserChat, errors=CHAT_ERRORS,
                 summary="One page of the chat as the user sees it now, newest messages first"
                         " chosen, listed oldest first")
def user_get_chat(conn, p):
    after = p["wait_after_message_id"]
    return waited(lambda: chats.user_view(conn, p["bot_id"], p["user_id"], p["limit"],
                                          p.get("before_message_id")),
                  lambda page: any(m["message_id"] > after and m["from_bot"]
                                   for m in page["messages"]),
                  p["wait_ms"])


class UserSendMediaSchema(UserBotSchema):
    file = FilePart(required=True)
    caption = Caption()
    type = MediaType(metadata={"description": "default: from the file's kind"})


@operator_method("userSendMedia", UserSendMediaSchema(), result=results.Message,
                 errors=(*ACTIVE_CHAT_ERRORS, ErrorCode.DEPENDENCY_UNAVAILABLE),
                 summary="The user sends a file (multipart field file) to the bot")
def user_send_media(conn, p):
    settings, upload = current_app.config["SETTINGS"], p["file"]
    return media_messages.user_send_media_file(
        conn, current_app.config["MEDIA"], settings.data_dir, settings.storage_quota_bytes,
        p["bot_id"], p["user_id"], upload.path, upload.file_name, upload.content_type,
        caption=p.get("caption"), type=p.get("type"))
