"""The request's connection: this thread's, kept on Flask's ``g`` for the
request and left idle (no transaction open) at its end. Apart from the rest
of the package because it is the one part that needs Flask: ``botsvc serve``,
the other commands and the migration runner open the database without it,
and ``botsvc.db`` loads this module only when ``get_db`` or ``release_db``
is first asked for (its ``__getattr__``)."""
from __future__ import annotations

from flask import current_app, g

from botsvc.db.connection import Connection, thread_connection


def get_db() -> Connection:
    """The request's connection (this thread's)."""
    if "db" not in g:
        g.db = thread_connection(current_app.config["SETTINGS"].db_path)
    return g.db


def release_db(_exc=None) -> None:
    """Teardown: leave the thread's connection idle, with no transaction open."""
    conn = g.pop("db", None)
    if conn is not None and conn.in_transaction:
        conn.execute("ROLLBACK")
