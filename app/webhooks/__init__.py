"""Webhooks. Target validation and the delivery transport (addresses, urls,
secret_token, transport) are pure library code: no Flask, no database.
``delivery`` is the worker that drains the queue with them; the queue state
lives in app/domain/webhooks.py and the methods in app/api/webhooks.py."""
from app.webhooks.addresses import (
    default_resolver,
    denied_reason,
    is_allowed_address,
    is_public_address,
)
from app.webhooks.secret_token import SECRET_HEADER, validate_secret_token
from app.webhooks.transport import DeliveryResult, deliver
from app.webhooks.urls import parse_webhook_url, validate_webhook_url

__all__ = [
    "SECRET_HEADER",
    "DeliveryResult",
    "default_resolver",
    "deliver",
    "denied_reason",
    "is_allowed_address",
    "is_public_address",
    "parse_webhook_url",
    "validate_secret_token",
    "validate_webhook_url",
]
