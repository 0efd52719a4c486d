"""SQLite access: connections and the one transaction helper (the migration
runner is app/botsvc/migrations.py). Import from here: ``botsvc.db`` is the
door; ``connection.py`` opens and keeps connections, ``transactions.py``
holds ``transaction``, the one way to write, ``request.py`` the request's
connection (``get_db``, ``release_db``: loaded on first use, so that what
opens the database outside a request, ``botsvc serve`` above all, loads no
Flask: it is about half of that command's imports, paid before gunicorn
starts).

Rules this package enforces, so that several worker processes share one
database file without "database is locked" failures or lost writes:
connections are opened in autocommit mode (``isolation_level=None``) and every
write unit starts with ``BEGIN IMMEDIATE``, so a writer waits on the busy
timeout instead of failing at once; per-connection pragmas are set on every
connection; nothing opens the database at import time.
"""
from botsvc.db.connection import (
    BUSY_TIMEOUT_MS,
    Connection,
    checkpoint,
    checkpoint_passive,
    connect,
    thread_connection,
)
from botsvc.db.transactions import WriteLockBusy, WrittenBeforeTheBody, transaction

__all__ = ["BUSY_TIMEOUT_MS", "Connection", "WriteLockBusy", "WrittenBeforeTheBody", "checkpoint",
           "checkpoint_passive", "connect", "get_db", "release_db", "thread_connection",
           "transaction"]


def __getattr__(name: str):
    if name in ("get_db", "release_db"):
        from botsvc.db import request  # lazy: Flask, only where a request is served
        return getattr(request, name)
    raise AttributeError(f"module {__name__!r} has no attribute {name!r}")
