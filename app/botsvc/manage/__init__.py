"""The operator API: the bot manager and simulated users."""
from botsvc.manage import calls, export, methods, replay, testing  # noqa: F401
from botsvc.manage.dispatch import bp  # noqa: F401
