"""Identity: getMe, getChat, getChatMember. Reading a membership never grants
permission to send."""
from __future__ import annotations

from botsvc.api.registry import Call, api_method
from botsvc.catalogue import results
from botsvc.catalogue.validation import ChatId, StrictSchema
from botsvc.domain.bots import render_bot, require_bot
from botsvc.domain.chats import render_chat, require_chat
from botsvc.errors import ErrorCode


class ChatRefSchema(StrictSchema):
    chat_id = ChatId(required=True)


@api_method("getMe", result=results.Bot, summary="The bot this token belongs to")
def get_me(call: Call) -> dict:
    return render_bot(require_bot(call.conn, call.bot.id))


@api_method("getChat", ChatRefSchema(), result=results.Chat,
            errors=(ErrorCode.CHAT_NOT_FOUND,), summary="One of the bot's chats and its membership")
def get_chat(call: Call) -> dict:
    return render_chat(require_chat(call.conn, call.bot.id, call.params["chat_id"]))


@api_method("getChatMember", ChatRefSchema(), result=results.Chat,
            errors=(ErrorCode.CHAT_NOT_FOUND,), summary="The membership of a chat (as getChat)")
def get_chat_member(call: Call) -> dict:
    return render_chat(require_chat(call.conn, call.bot.id, call.params["chat_id"]))
