"""answerCallbackQuery: the bot's one answer to a user's button click.

It delivers no message, so it counts against the general API limit only, not
the send limit.
"""
from __future__ import annotations

from botsvc.api.registry import Call, api_method
from botsvc.catalogue import results
from botsvc.catalogue.validation import Bool, Str, StrictSchema, Text
from botsvc.domain import callbacks

ANSWER_TEXT_MAX_BYTES = 1024


class AnswerCallbackQuerySchema(StrictSchema):
    callback_query_id = Str(required=True)
    text = Text(max_bytes=ANSWER_TEXT_MAX_BYTES)
    show_alert = Bool(load_default=False)


@api_method("answerCallbackQuery", AnswerCallbackQuerySchema(), result=results.TRUE, reaction="answer",
            summary="Answer a callback_query this bot received (once)")
def answer_callback_query(call: Call) -> bool:
    p = call.params
    callbacks.answer(call.conn, call.bot.id, p["callback_query_id"], text=p.get("text"),
                     show_alert=p["show_alert"])
    return True
