"""Operator methods: thin wrappers of the domain functions the CLI also uses."""
from __future__ import annotations

from flask import current_app
from marshmallow import validate

from app.api.files import FilePart
from app.api.media import Caption
from app.domain import bots, chats, media_messages
from app.domain.keyboards import CALLBACK_DATA_MAX_BYTES
from app.manage.dispatch import operator_method
from app.validation import Bool, Int, MessageId, Pattern, Str, StrictSchema, Text

USERNAME = r"^[a-z0-9_]{2,29}bot\Z"


class CreateBotSchema(StrictSchema):
    username = Pattern(USERNAME, "username must be 5 to 32 of a-z, 0-9, _ and end in 'bot'",
                       required=True)
    display_name = Text(min_bytes=1, max_bytes=128)
    description = Text(max_bytes=512)


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
    start_parameter = Pattern(r"^[A-Za-z0-9_-]{1,64}\Z",
                              "start_parameter must be 1 to 64 ASCII letters, digits, _ or -")


class UserSendMessageSchema(UserBotSchema):
    text = Text(min_bytes=1, max_bytes=16384, required=True,
                validate=[validate.Length(min=1)])
    reply_to_message_id = MessageId()


@operator_method("createBot", CreateBotSchema())
def create_bot(conn, p):
    bot, token = bots.create_bot(conn, p["username"], p.get("display_name"),
                                 p.get("description"))
    return {"bot": bot, "token": token}


@operator_method("rotateToken", BotIdSchema())
def rotate_token(conn, p):
    return {"token": bots.rotate_token(conn, p["bot_id"])}


@operator_method("setBotDisabled", SetBotDisabledSchema())
def set_bot_disabled(conn, p):
    bots.set_bot_disabled(conn, p["bot_id"], p["disabled"])
    return True


@operator_method("setPlatformDisabled", SetPlatformDisabledSchema())
def set_platform_disabled(conn, p):
    bots.set_platform_disabled(conn, p["disabled"])
    return True


@operator_method("listBots")
def list_bots(conn, p):
    return bots.list_bots(conn)


@operator_method("createUser", CreateUserSchema())
def create_user(conn, p):
    return {"user_id": bots.create_user(conn, p.get("display_name"))}


@operator_method("userStart", UserStartSchema())
def user_start(conn, p):
    return chats.user_start(conn, p["bot_id"], p["user_id"], p.get("start_parameter"))


@operator_method("userStop", UserBotSchema())
def user_stop(conn, p):
    chats.user_stop(conn, p["bot_id"], p["user_id"])
    return True


@operator_method("userBlock", UserBotSchema())
def user_block(conn, p):
    chats.user_block(conn, p["bot_id"], p["user_id"])
    return True


@operator_method("userSendMessage", UserSendMessageSchema())
def user_send_message(conn, p):
    return chats.user_send_message(conn, p["bot_id"], p["user_id"], p["text"],
                                   p.get("reply_to_message_id"))


class UserClickButtonSchema(UserBotSchema):
    message_id = MessageId(required=True)
    callback_data = Text(min_bytes=1, max_bytes=CALLBACK_DATA_MAX_BYTES, required=True)


@operator_method("userClickButton", UserClickButtonSchema())
def user_click_button(conn, p):
    return chats.user_click_button(conn, p["bot_id"], p["user_id"], p["message_id"],
                                   p["callback_data"])


@operator_method("userGetChat", UserBotSchema())
def user_get_chat(conn, p):
    return chats.user_view(conn, p["bot_id"], p["user_id"])


class UserSendMediaSchema(UserBotSchema):
    file = FilePart(required=True)
    caption = Caption()
    type = Str(validate=[validate.OneOf(media_messages.MEDIA_TYPES, error="must be one of "
                                        + ", ".join(media_messages.MEDIA_TYPES))])


@operator_method("userSendMedia", UserSendMediaSchema())
def user_send_media(conn, p):
    settings, upload = current_app.config["SETTINGS"], p["file"]
    return media_messages.user_send_media_file(
        conn, current_app.config["MEDIA"], settings.data_dir, settings.storage_quota_bytes,
        p["bot_id"], p["user_id"], upload.path, upload.file_name, upload.content_type,
        caption=p.get("caption"), type=p.get("type"))
