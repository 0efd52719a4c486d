"""What a handler is given: the update, what its filter matched, the API,
and short ways to act on the chat in hand (reply, answer, edit, delete).

An ``async def`` handler gets a context over the awaited API
(``await ctx.reply("hi")``); a plain ``def`` handler, one over the blocking
API (``ctx.reply("hi")``). The methods are the same."""
from __future__ import annotations

import re
from typing import Any


class Context:
    def __init__(self, update: dict[str, Any], api: Any, *, command: str | None = None,
                 args: str | None = None, match: re.Match | None = None):
        self.update = update
        self.api = api          # botsvc.bot.Api, or AsyncApi for an async handler
        self.message: dict[str, Any] | None = update.get("message")
        self.membership: dict[str, Any] | None = update.get("membership")
        self.callback_query: dict[str, Any] | None = update.get("callback_query")
        self.command = command  # "start" for "/start hello"
        self.args = args        # "hello": the start parameter, or what follows a command
        self.match = match      # the text pattern's match

    @property
    def update_id(self) -> int:
        return self.update["update_id"]

    @property
    def chat_id(self) -> str:
        if self.message is not None:
            return self.message["chat"]["id"]
        if self.membership is not None:
            return self.membership["chat_id"]
        return self.callback_query["chat_id"]

    @property
    def text(self) -> str | None:
        return (self.message or {}).get("text")

    @property
    def data(self) -> str | None:
        """The clicked button's callback_data."""
        return (self.callback_query or {}).get("data")

    @property
    def file(self) -> dict[str, Any] | None:
        """The media a user sent (file_id, kind, mime_type, file_size, ...)."""
        return (self.message or {}).get("media")

    def reply(self, text: str, **extra: Any):
        """sendMessage to this chat (``reply_markup=``, ``reply_to_message_id=``, ...)."""
        return self.api.send_message(chat_id=self.chat_id, text=text, **extra)

    def answer(self, text: str | None = None, *, show_alert: bool | None = None):
        """answerCallbackQuery for the click in hand."""
        if self.callback_query is None:
            raise ValueError("answer() is for a callback query; this update has none")
        return self.api.answer_callback_query(callback_query_id=self.callback_query["id"],
                                              text=text, show_alert=show_alert)

    def edit(self, text: str, *, message_id: int | None = None, **extra: Any):
        """editMessageText of ``message_id``, by default the message whose
        button was clicked."""
        return self.api.edit_message_text(chat_id=self.chat_id, message_id=self._target(message_id),
                                      text=text, **extra)

    def delete(self, message_id: int | None = None):
        """deleteMessage of ``message_id``, by default the message whose
        button was clicked (a bot deletes only its own messages)."""
        return self.api.delete_message(chat_id=self.chat_id, message_id=self._target(message_id))

    def _target(self, message_id: int | None) -> int:
        if message_id is not None:
            return message_id
        if self.callback_query is None:
            raise ValueError("give message_id: only a click names a message of the bot's own")
        return self.callback_query["message_id"]
