"""Nothing is written before the body is read: a rule enforced, not only said.

Under botsvc's gunicorn worker, a request whose body has not all arrived when
the app first reads it is parked and later served again from its first byte
(app/botsvc/connection/body.py): whatever the app wrote before that read would
be written twice. So while a request that carries a body has not read it,
its SQLite connection's writes are held (``until_body_read``): a write fails
at once with ``WrittenBeforeTheBody``, a 500 in every test that sends a
body, through Flask's test client too, not only in the rare run where a
slow body happens to park. The connection is writable again at the body's
first read, or once the app has answered without reading it (an answer made
is never parked), and always at the end of the request.

How: every write goes through ``transaction`` (app/botsvc/db/transactions.py),
the one way to write, and it refuses to begin one on a held connection.
A write made some other way (a bare statement in autocommit) is caught
when the guard lifts: the connection's count of changed rows
(``total_changes``, SQLite's own, triggers included) has moved, and the
request fails the same way. Writers on connections of their own (the call
log's background thread) are outside the rule, as they are outside the
request.

Why not SQLite's ``PRAGMA query_only``, as first built: like every flag
pragma, setting it expires every statement the connection has prepared,
and SQLite compiles each again at its next use. Set and cleared once per
request, it had every request compile all its SQL anew: a fifth of a
sendMessage's instructions, and most of what the call log's own
statements cost a lone call (measured with callgrind; docs/call-log.md).
"""
from __future__ import annotations

import contextlib
from collections.abc import Iterator

from flask import g, request

from botsvc.db import WrittenBeforeTheBody, thread_connection


@contextlib.contextmanager
def until_body_read(db_path: str) -> Iterator[None]:
    """Around the app's handling of one request (see the module)."""
    environ = request.environ
    if not _has_body(environ):
        yield
        return
    conn = thread_connection(db_path)     # the one get_db() hands this request
    conn.writes_held = True
    g.write_guard = (conn, conn.total_changes)
    environ["wsgi.input"] = _FirstRead(environ["wsgi.input"])
    try:
        yield
    finally:
        lift()


def lift() -> None:
    """The body has been read, or the request answered: writes may go on."""
    held = g.pop("write_guard", None)
    if held is None:
        return
    conn, changes = held
    conn.writes_held = False
    if conn.total_changes != changes:
        raise WrittenBeforeTheBody("rows were written before the request's body was read"
                                   " (not through transaction)")


def _has_body(environ: dict) -> bool:
    length = environ.get("CONTENT_LENGTH")
    return bool(environ.get("HTTP_TRANSFER_ENCODING")) or (
        bool(length) and length.isdigit() and int(length) > 0)


class _FirstRead:
    """``wsgi.input`` that lifts the guard once a read of it has returned."""

    def __init__(self, stream):
        self._stream = stream

    def read(self, size=None):
        data = self._stream.read(size) if size is not None else self._stream.read()
        lift()
        return data

    def readline(self, size=None):
        data = self._stream.readline(size)
        lift()
        return data

    def readlines(self, hint=None):
        data = self._stream.readlines(hint)
        lift()
        return data

    def __iter__(self):
        lines = iter(self._stream)
        lift()
        return lines

    def __getattr__(self, name):
        found = getattr(self._stream, name)
        if name != "readinto":
            return found

        def readinto(buffer):     # Werkzeug reads with it where the stream has it
            count = found(buffer)
            lift()
            return count
        return readinto
