"""The /v2 methods, one module per group. Importing a group registers its
methods with the dispatcher."""
from app.api import broadcasts, callbacks, cards, editing, identity, sending, updates  # noqa: F401
from app.api.dispatch import bp  # noqa: F401
