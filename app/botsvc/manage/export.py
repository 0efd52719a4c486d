"""exportChat: a user's chat with a bot as a pytest module for the plugin,
or as a JSON transcript (docs/export.md). Always there, like getBotCalls:
it reads what the service keeps and changes nothing."""
from __future__ import annotations

import json

from flask import current_app

from botsvc import clock
from botsvc.api.registry import reaction_methods
from botsvc.call_log.capture import writer
from botsvc.catalogue import results
from botsvc.catalogue.validation import MessageId, OneOf
from botsvc.domain import conversation, conversation_pytest
from botsvc.errors import ErrorCode
from botsvc.manage.dispatch import operator_method
from botsvc.manage.methods import UserBotSchema


class ExportChatSchema(UserBotSchema):
    after_message_id = MessageId(metadata={
        "description": "only what came after this message of the chat (default: the whole"
                       " chat)"})
    format = OneOf(conversation.FORMATS, load_default="pytest", metadata={
        "description": "pytest: a test module for the botsvc pytest plugin; transcript: the"
                       " same as JSON (format botsvc-transcript/1)"})


@operator_method("exportChat", ExportChatSchema(), result=results.ExportedChat,
                 errors=(ErrorCode.CHAT_NOT_FOUND,),
                 summary="A user's chat with a bot as a test: a pytest module for the plugin,"
                         " or a JSON transcript")
def export_chat(conn, p):
    log = writer()
    if log is not None:
        log.write_soon()   # the bot's latest calls, if this process still holds them
    settings = current_app.config["SETTINGS"]
    transcript = conversation.export_chat(conn, settings.data_dir, p["bot_id"], p["user_id"],
                                          p.get("after_message_id"), settings.call_log,
                                          clock.time(), reaction_methods())
    name = conversation_pytest.file_name(transcript["bot"])
    if p["format"] == "transcript":
        return {"file_name": name[:-len(".py")] + ".json",
                "content": json.dumps(transcript, ensure_ascii=False, indent=2) + "\n"}
    return {"file_name": name, "content": conversation_pytest.render(transcript)}
