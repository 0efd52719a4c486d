"""The /v2 methods, one module per group. Importing a group registers its
methods with the dispatcher."""
from app.api import (  # noqa: F401
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
from app.api.dispatch import bp  # noqa: F401
