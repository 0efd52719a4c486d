"""The /v2 methods, one module per group. Importing a group registers its
methods with the dispatcher."""
from app.api import callbacks, cards, editing, identity, sending, updates, webhooks  # noqa: F401
from app.api.dispatch import bp  # noqa: F401
