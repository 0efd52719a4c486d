"""getBotCalls: the bot's call log (docs/call-log.md). Always there, like
getWebhookDeliveries: it is how a bot's developer sees what their bot did."""
from __future__ import annotations

from botsvc import clock
from botsvc.api.call_records import writer
from botsvc.catalogue import results
from botsvc.catalogue.validation import Bool, CursorField, LimitField
from botsvc.domain import call_log
from botsvc.domain.bots import require_bot
from botsvc.manage.dispatch import operator_method
from botsvc.manage.methods import ApiMethodName, BotIdSchema


class BotCallsSchema(BotIdSchema):
    limit = LimitField()
    cursor = CursorField()
    method = ApiMethodName(metadata={"description": "only the calls of this /v2 method"})
    failures_only = Bool(load_default=False, metadata={"description": "only failed calls"})


@operator_method("getBotCalls", BotCallsSchema(), result=results.BotCallsPage,
                 summary="A bot's recent /v2 calls with their parameters, results and errors, "
                         "newest first")
def get_bot_calls(conn, p):
    require_bot(conn, p["bot_id"])
    log = writer()
    if log is not None:
        log.write_soon()   # what this process has not written yet, if the lock is free
    return call_log.calls_page(conn, p["bot_id"], p["limit"], p.get("cursor"), clock.time(),
                               method=p.get("method"), failures_only=p["failures_only"])
