"""Broadcast methods: getSubscribers, createBroadcast, getBroadcast,
getBroadcastRecipients, cancelBroadcast. Delivery is in broadcast_delivery."""
from __future__ import annotations

from marshmallow import fields, validate, validates_schema

from botsvc import metrics
from botsvc.api.broadcast_payload import (
    BROADCAST_METHODS,
    check_payload_references,
    try_payload,
    validate_payload,
)
from botsvc.api.registry import Call, api_method
from botsvc.catalogue import results
from botsvc.catalogue.validation import ChatId, CursorField, LimitField, OneOf, StrictSchema, Text
from botsvc.domain import broadcasts
from botsvc.errors import ErrorCode
from botsvc.jobs import DELIVER_BROADCASTS, wake_after_commit
from botsvc.limits import BROADCAST

MAX_CHAT_IDS = 10000


class SubscribersSchema(StrictSchema):
    limit = LimitField()
    cursor = CursorField()


class CreateBroadcastSchema(StrictSchema):
    method = OneOf(BROADCAST_METHODS, required=True)
    payload = fields.Dict(required=True, error_messages={"invalid": "must be an object"},
                          metadata={"description": "the parameters of `method` without "
                                                   "chat_id and reply_to_message_id; media "
                                                   "as file_ids"})
    chat_ids = fields.List(
        ChatId(), error_messages={"invalid": "must be an array of chat ids"},
        validate=[validate.Length(min=1, max=MAX_CHAT_IDS,
                                  error=f"must hold 1 to {MAX_CHAT_IDS} chat ids")])

    @validates_schema
    def payload_fits_method(self, data, **kwargs):
        # Raises INVALID_PARAMETER (field method or payload) itself.
        validate_payload(data["method"], data["payload"])


class BroadcastIdSchema(StrictSchema):
    # Any non-empty string; one that is not this bot's is BROADCAST_NOT_FOUND.
    broadcast_id = Text(min_bytes=1, required=True)


class RecipientsSchema(BroadcastIdSchema):
    limit = LimitField()
    cursor = CursorField()


@api_method("getSubscribers", SubscribersSchema(), result=results.SubscribersPage,
            summary="The active members, in chat_id order, a page at a time")
def get_subscribers(call: Call) -> dict:
    return broadcasts.subscribers_page(call.conn, call.bot.id, call.params["limit"],
                                       call.params["cursor"])


@api_method("createBroadcast", CreateBroadcastSchema(), buckets=(BROADCAST,),
            result=results.Broadcast, errors=(ErrorCode.CHAT_NOT_FOUND,),
            summary="Queue one message for many members, delivered by the worker")
def create_broadcast(call: Call) -> dict:
    p = call.params
    check_payload_references(call.conn, call.bot.id, p["method"], p["payload"])
    row = broadcasts.create_broadcast(call.conn, call.bot.id, p["method"], p["payload"],
                                      p.get("chat_ids"))
    sample = broadcasts.sample_active_recipient(call.conn, row["id"])
    if sample is not None:
        try_payload(call.conn, call.settings, call.bot, p["method"], p["payload"], sample)
    wake_after_commit(call.conn, DELIVER_BROADCASTS)
    return broadcasts.render_broadcast(row)


@api_method("getBroadcast", BroadcastIdSchema(), result=results.Broadcast,
            errors=(ErrorCode.BROADCAST_NOT_FOUND,), summary="A broadcast's status and counts")
def get_broadcast(call: Call) -> dict:
    row = broadcasts.require_broadcast(call.conn, call.bot.id, call.params["broadcast_id"])
    return broadcasts.render_broadcast(row)


@api_method("getBroadcastRecipients", RecipientsSchema(), result=results.RecipientsPage,
            errors=(ErrorCode.BROADCAST_NOT_FOUND,),
            summary="A broadcast's recipients in delivery order, a page at a time")
def get_broadcast_recipients(call: Call) -> dict:
    p = call.params
    return broadcasts.recipients_page(call.conn, call.bot.id, p["broadcast_id"], p["limit"],
                                      p["cursor"])


@api_method("cancelBroadcast", BroadcastIdSchema(), result=results.TRUE,
            errors=(ErrorCode.BROADCAST_NOT_FOUND,),
            summary="Cancel what is still queued (sent messages stay)")
def cancel_broadcast(call: Call) -> bool:
    cancelled = broadcasts.cancel_broadcast(call.conn, call.bot.id, call.params["broadcast_id"])
    call.conn.after_commit(lambda: metrics.broadcast_recipients("cancelled", cancelled))
    return True
