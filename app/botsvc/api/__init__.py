"""The /v2 methods, one module per group. Importing a group registers its
methods with the dispatcher; importing broadcast_delivery registers the job
that sends what createBroadcast queued."""
from botsvc.api import (  # noqa: F401
    broadcast_delivery,
    broadcasts,
    callbacks,
    cards,
    editing,
    files,
    identity,
    media,
    sending,
    updates,
    webhooks,
)
from botsvc.api.dispatch import bp  # noqa: F401
