"""Webhooks: setWebhook, deleteWebhook, getWebhookInfo. A webhook and polling exclude each other: while one is set, getUpdates
answers WEBHOOK_ACTIVE."""
from __future__ import annotations

from botsvc import clock
from botsvc.api.registry import Call, api_method
from botsvc.api.updates import polling_guards
from botsvc.catalogue import results
from botsvc.catalogue.validation import Bool, Pattern, Str, StrictSchema
from botsvc.domain import webhooks
from botsvc.errors import ApiError, ErrorCode
from botsvc.jobs import DELIVER_WEBHOOKS, wake_after_commit
from botsvc.webhooks import delivery
from botsvc.webhooks.secret_token import SECRET_TOKEN
from botsvc.webhooks.urls import validate_webhook_url


class SetWebhookSchema(StrictSchema):
    url = Str(required=True)
    # The message never repeats the value: it is a credential (``secret``:
    # the call log keeps ``[secret]`` in its place).
    secret_token = Pattern(SECRET_TOKEN, "must be 16 to 256 ASCII letters, digits, '_' or '-'",
                           required=True, metadata={"secret": True})
    drop_pending_updates = Bool(load_default=False)


class DeleteWebhookSchema(StrictSchema):
    drop_pending_updates = Bool(load_default=False)


def check_url(call: Call) -> None:
    """The URL rules, including the DNS lookup: run by the dispatcher before the
    write transaction, which must never wait on DNS."""
    validate_webhook_url(call.params["url"], allow_private=call.settings.webhook_allow_private,
                         resolve=delivery.resolver)


@api_method("setWebhook", SetWebhookSchema(), prepare=check_url, result=results.TRUE,
            summary="Receive updates at an HTTPS URL instead of polling")
def set_webhook(call: Call) -> bool:
    # Stored as given, and shown so by getWebhookInfo; every delivery parses
    # and resolves it again (its normalized form is what is contacted).
    webhooks.set_webhook(call.conn, call.bot.id, call.params["url"],
                         call.params["secret_token"], call.params["drop_pending_updates"],
                         clock.now())
    wake_after_commit(call.conn, DELIVER_WEBHOOKS)   # updates may be waiting
    return True


@api_method("deleteWebhook", DeleteWebhookSchema(), result=results.TRUE,
            summary="Stop webhook delivery and poll again")
def delete_webhook(call: Call) -> bool:
    webhooks.delete_webhook(call.conn, call.bot.id, call.params["drop_pending_updates"])
    return True


@api_method("getWebhookInfo", result=results.WebhookInfo,
            summary="The webhook's address, queue and last delivery outcomes")
def get_webhook_info(call: Call) -> dict:
    return webhooks.webhook_info(call.conn, call.bot.id, clock.time())


def refuse_polling_while_webhook_set(conn, bot_id: int) -> None:
    if webhooks.webhook_is_set(conn, bot_id):
        raise ApiError(ErrorCode.WEBHOOK_ACTIVE, "getUpdates is not available while a webhook "
                       "is set; call deleteWebhook to poll again")


polling_guards.append(refuse_polling_while_webhook_set)
