"""A request body that has not arrived holds no thread, whatever its framing.

A thread takes a request as soon as its head is whole, so that the app can
refuse it before its body (a wrong token, an unknown method, a declared
length over the limits: docs/connection.md). When the app then reads a body
that has not all arrived (of declared length, or chunked), the read raises ``Parked``
(a BaseException, so that no handler of the app turns it into an answer and
nothing is recorded): the app's call unwinds having answered nothing, the
thread is free, and the worker's main loop reads the rest of the body (into
a spool, bounded: app/botsvc/connection/spool.py) under the same deadline a
thread had, then hands the request to a thread again, from its first byte.
The second time the whole body is there and the app runs to the end. This is
what nginx's request buffering gives behind the front door, for clients that
reach gunicorn directly. A chunked body's end is found by following its
framing (app/botsvc/connection/chunked.py), and its data is held to the limit
the app holds it to (``Declared.limit``): past it, 413 from the main loop.
"""
from __future__ import annotations

from dataclasses import dataclass

from botsvc.config import JSON_BODY_LIMIT
from botsvc.errors import ApiError, ErrorCode

# Bodies of these types are forms, read up to the upload ceiling; any other
# body is JSON, read up to JSON_BODY_LIMIT.
FORM_TYPES = ("multipart/form-data", "application/x-www-form-urlencoded")


class Parked(BaseException):  # noqa: N818 - a control-flow signal, as GeneratorExit
    """The app read a body that has not all arrived (see the module)."""


@dataclass(frozen=True)
class Declared:
    """What a request head says of its body."""
    length: int | None          # Content-Length, when there is one valid value
    chunked: bool               # Transfer-Encoding: chunked, and no Content-Length
    form: bool = False          # a form's Content-Type (FORM_TYPES): JSON otherwise

    @property
    def parkable(self) -> bool:
        return bool(self.length) or self.chunked

    def limit(self, upload_max_bytes: int) -> int:
        """The most data the app takes in such a body."""
        return upload_max_bytes if self.form else JSON_BODY_LIMIT


def declared(head: bytes, head_end: int) -> Declared:
    lengths: set[bytes] = set()
    codings: list[bytes] = []
    form = False
    for line in bytes(head[:head_end]).split(b"\n")[1:]:
        name, colon, value = line.partition(b":")
        if not colon:
            continue
        name = name.strip().lower()
        if name == b"content-length":
            lengths.add(value.strip())
        elif name == b"transfer-encoding":
            codings.append(value.strip().lower())
        elif name == b"content-type":
            form = value.split(b";")[0].strip().lower().decode("latin-1") in FORM_TYPES
    # Anything else (two lengths, a length beside chunked, another coding)
    # is gunicorn's to refuse, by a thread, before the app reads a byte.
    chunked = codings == [b"chunked"] and not lengths
    if len(lengths) != 1 or codings:
        return Declared(None, chunked, form)
    [length] = lengths
    return Declared(int(length) if length.isdigit() and len(length) < 16 else None, False, form)


def too_large(limit: int) -> ApiError:
    """413. What the client sent beyond the limit is read and discarded, or
    the connection closed, after the answer (app/botsvc/connection/wire.py)."""
    return ApiError(ErrorCode.REQUEST_TOO_LARGE, f"Request body is larger than {limit} bytes",
                    limit=limit)


class ParkingInput:
    """``wsgi.input`` that parks the request on its first read unless the
    whole body has arrived (``arrived()``); after that, gunicorn's own.
    ``admit()`` asks the worker's spool for room first, and raises the
    refusal (app/botsvc/connection/spool.py) when there is none."""

    def __init__(self, stream, arrived, admit):
        self._stream = stream
        self._arrived = arrived
        self._admit = admit
        self._checked = False

    def _check(self) -> None:
        if not self._checked:
            if not self._arrived():
                self._admit()
                raise Parked()
            self._checked = True

    def read(self, size=None):
        self._check()
        return self._stream.read(size)

    def readline(self, size=None):
        self._check()
        return self._stream.readline(size)

    def readlines(self, hint=None):
        self._check()
        return self._stream.readlines(hint)

    def __iter__(self):
        self._check()
        return iter(self._stream)

    def __getattr__(self, name):
        return getattr(self._stream, name)
