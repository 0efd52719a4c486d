"""getBotCalls: the bot's call log (docs/call-log.md). Always there, like
getWebhookDeliveries: it is how a bot's developer sees what their bot did."""
from __future__ import annotations

from marshmallow import validates_schema

from botsvc import clock
from botsvc.call_log.capture import writer
from botsvc.catalogue import results
from botsvc.catalogue.validation import Bool, CursorField, Int, LimitField, Text
from botsvc.domain import call_log
from botsvc.domain.bots import require_bot
from botsvc.errors import invalid
from botsvc.manage.dispatch import operator_method
from botsvc.manage.methods import ApiMethodName, BotIdSchema
from botsvc.manage.waiting import WaitMs, waited
from botsvc.pagination import SQLITE_MAX_INTEGER

FILTER_MAX_BYTES = 256   # chat_id and search


class BotCallsSchema(BotIdSchema):
    limit = LimitField()
    cursor = CursorField()
    method = ApiMethodName(metadata={"description": "only the calls of this /v2 method"})
    failures_only = Bool(load_default=False, metadata={"description": "only failed calls"})
    after_call_id = Int(min=0, max=SQLITE_MAX_INTEGER, metadata={
        "description": "only the records newer than this call_id (a live view asks with the "
                       "newest it has, and pages on with next_cursor: no gap)"})
    chat_id = Text(min_bytes=1, max_bytes=FILTER_MAX_BYTES, metadata={
        "description": "only the calls whose params name this chat_id"})
    since = Int(min=0, max=SQLITE_MAX_INTEGER, metadata={
        "description": "only the calls that arrived at this date or later (Unix seconds, "
                       "the service clock)"})
    until = Int(min=0, max=SQLITE_MAX_INTEGER, metadata={
        "description": "only the calls that arrived at this date or earlier"})
    search = Text(min_bytes=1, max_bytes=FILTER_MAX_BYTES, metadata={
        "description": "only the calls whose params or result hold this text (as their JSON "
                       "spells it), case-insensitively"})
    detail = Bool(load_default=False, metadata={
        "description": "also each record's error_parameters, injected, params_preview and "
                       "cut_fields, where it has them"})
    wait_ms = WaitMs("a kept call matches (with after_call_id: a new one)")

    @validates_schema
    def until_not_before_since(self, data, **kwargs):
        if data.get("until") is not None and data.get("since", 0) > data["until"]:
            raise invalid("until", "must not be before since")


@operator_method("getBotCalls", BotCallsSchema(), result=results.BotCallsPage,
                 summary="A bot's recent /v2 calls with their parameters, results and errors, "
                         "newest first")
def get_bot_calls(conn, p):
    require_bot(conn, p["bot_id"])
    log = writer()
    where = call_log.CallFilter(
        method=p.get("method"), failures_only=p["failures_only"],
        after_call_id=p.get("after_call_id"), chat_id=p.get("chat_id"), since=p.get("since"),
        until=p.get("until"), search=p.get("search"))

    def read() -> dict:
        if log is not None:
            log.write_soon()   # what this process has not written yet, if the lock is free
        return call_log.calls_page(conn, p["bot_id"], p["limit"], p.get("cursor"),
                                   clock.time(), where=where, detail=p["detail"])

    return waited(read, lambda page: bool(page["calls"]), p["wait_ms"])
