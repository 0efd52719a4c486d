"""Updates: getUpdates (short polling only). Webhook methods join this group."""
from __future__ import annotations

from marshmallow import validate

from botsvc.api.registry import Call, api_method
from botsvc.catalogue import results
from botsvc.catalogue.validation import Int, StrictSchema
from botsvc.domain import updates
from botsvc.errors import ErrorCode

# Hooks that refuse polling while another delivery mode is configured (the
# webhook module adds the WEBHOOK_ACTIVE check here).
polling_guards: list = []


class GetUpdatesSchema(StrictSchema):
    offset = Int(min=0, load_default=0)
    limit = Int(min=1, max=100, load_default=100)
    timeout = Int(load_default=0, validate=[validate.Equal(0, error="only 0 is allowed: "
                                                                  "there is no long polling")])


@api_method("getUpdates", GetUpdatesSchema(), result=results.ListOf(results.Update),
            errors=(ErrorCode.WEBHOOK_ACTIVE,),
            summary="Acknowledge the updates below offset; the pending ones, oldest first")
def get_updates(call: Call) -> list[dict]:
    for guard in polling_guards:
        guard(call.conn, call.bot.id)
    updates.acknowledge(call.conn, call.bot.id, call.params["offset"])
    return updates.pending_updates(call.conn, call.bot.id, call.params["offset"],
                                   call.params["limit"])
