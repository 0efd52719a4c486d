"""The HTTP connection under the app: what a request's body leaves on the wire.

A client that reuses a kept-alive connection sends its next request right
after this one's body. When the app answers without reading the whole body
(401 before an upload is read, 404 for no such method, 413 by the declared
length), the unread rest would have to go before the next request could be
parsed. It is not read: reading a body only to throw it away is what a slow
client turns into a thread held for as long as it cares to trickle. So, once
the app has answered and before gunicorn sends the answer
(``settle_body``), what of the body has *already arrived* is taken (up to
SETTLE_MAX_BYTES, without waiting for a byte more); if that was all of it, the
connection stays open, otherwise the answer says ``Connection: close`` and the
connection closes after it (``close_connection``). The worker
(app/botsvc/gunicorn_worker.py) closes without waiting either: FIN, then what the
client still sends is dropped by its main loop for a moment, so the client
reads its answer rather than a reset, and no thread is held.
"""
from __future__ import annotations

import threading
from functools import partial

from botsvc.connection import body
from botsvc.errors import ApiError, ErrorCode

SETTLE_MAX_BYTES = 64 * 1024
_LOOPBACK = ("127.0.0.1", "::1")
_CHUNK = 16 * 1024

# The request this thread serves, set by the worker (app/botsvc/gunicorn_worker.py):
# ``request``, gunicorn's request, and ``arrived_only``, a context manager
# under which reads of its connection take what has arrived and raise
# NotArrived rather than wait; ``body_arrived``, set when the body declared
# has not all arrived with the head, which says whether it has now (a read
# before it has parks the request: app/botsvc/connection/body.py), and then
# ``admit_parked(environ)``, which asks the spool's bounds for room first
# (app/botsvc/connection/spool.py). All absent under Flask's test client.
current = threading.local()


class NotArrived(Exception):
    """A read under ``arrived_only`` found nothing waiting on the connection."""


class ReadDeadlineExceeded(Exception):
    """The client sent its request too slowly (app/botsvc/gunicorn_worker.py): raised
    from a read of the body, answered 408 REQUEST_TIMEOUT, and the connection
    closes (whatever else is in flight on it is unknown)."""


def request_timeout() -> ApiError:
    return ApiError(ErrorCode.REQUEST_TIMEOUT, "The request was sent too slowly; "
                    "the connection is closed")


def close_connection() -> None:
    """Make the answer carry ``Connection: close`` and close the connection
    after it (gunicorn's own flag, as for its ``max_requests``)."""
    request = getattr(current, "request", None)
    if request is not None:
        request.must_close = True


def settle_body(environ: dict) -> None:
    """Take what has already arrived of the body the app left unread, up to
    SETTLE_MAX_BYTES; close the connection if that is not the whole body."""
    if getattr(current, "request", None) is None:
        return   # not under our gunicorn worker: nothing is kept alive
    stream = environ.get("wsgi.input")
    left = _declared_rest(stream)
    if left == 0:
        return
    if left is not None and left > SETTLE_MAX_BYTES:
        close_connection()
        return
    taken = 0
    try:
        with current.arrived_only():
            while taken <= SETTLE_MAX_BYTES:
                chunk = stream.read(_CHUNK)
                if not chunk:
                    return
                taken += len(chunk)
    except Exception:   # noqa: BLE001 - not arrived, cut, or a bad chunk: where the next request starts is unknown
        pass
    close_connection()


def client_address(environ: dict) -> str | None:
    """The client's address: the peer's, or, when the peer is this machine
    (the front door, docs/production.md), the X-Forwarded-For it set: its last
    entry, the one a proxy adds (nginx here overwrites what a client sent)."""
    peer = environ.get("REMOTE_ADDR")
    forwarded = environ.get("HTTP_X_FORWARDED_FOR")
    if forwarded and peer in _LOOPBACK:
        return forwarded.rsplit(",", 1)[-1].strip() or peer
    return peer


def settling_bodies(wsgi_app):
    """``app.wsgi_app`` that settles each request's body once the app has
    answered, before gunicorn sends the answer (headers go out on its first write)."""
    def settled(environ, start_response):
        arrived = getattr(current, "body_arrived", None)
        stream = environ.get("wsgi.input")
        if arrived is not None and stream is not None:
            environ["wsgi.input"] = body.ParkingInput(   # may raise Parked
                stream, arrived, partial(current.admit_parked, environ))
        answer = wsgi_app(environ, start_response)
        environ["wsgi.input"] = stream
        settle_body(environ)
        return answer
    return settled


def _declared_rest(stream) -> int | None:
    """The unread bytes of a body of known length (None for a chunked one)."""
    reader = getattr(stream, "reader", None)
    length = getattr(reader, "length", None)   # gunicorn's LengthReader counts down
    if isinstance(length, int):
        return length
    return None
