"""The operator API: the bot manager and simulated users."""
from app.manage import methods, testing  # noqa: F401
from app.manage.dispatch import bp  # noqa: F401
