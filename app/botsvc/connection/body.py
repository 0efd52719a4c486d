"""A request body that has not arrived holds no thread.

A thread takes a request as soon as its head is whole, so that the app can
refuse it before its body (a wrong token, an unknown method, a declared
length over the limits: docs/connection.md). When the app then reads a body
of declared length that has not all arrived, the read raises ``Parked``
(a BaseException, so that no handler of the app turns it into an answer and
nothing is recorded): the app's call unwinds having answered nothing, the
thread is free, and the worker's main loop reads the rest of the body (in
memory up to SPOOL_MEMORY_BYTES, in a temporary file past that) under the
same deadline a thread had, then hands the request to a thread again, from
its first byte. The second time the whole body is there and the app runs to
the end. This is what nginx's request buffering gives behind the front door,
for clients that reach gunicorn directly. A chunked body is read by its
thread, under the deadline (app/botsvc/connection/sockets.py).
"""
from __future__ import annotations

import tempfile
from dataclasses import dataclass

from botsvc import disk

SPOOL_MEMORY_BYTES = 64 * 1024


class Parked(BaseException):  # noqa: N818 - a control-flow signal, as GeneratorExit
    """The app read a body that has not all arrived (see the module)."""


@dataclass(frozen=True)
class Declared:
    """What a request head says of its body."""
    length: int | None          # Content-Length, when there is one valid value
    chunked: bool               # a Transfer-Encoding (chunked or refused by gunicorn)

    @property
    def parkable(self) -> bool:
        return bool(self.length) and not self.chunked


def declared(head: bytes, head_end: int) -> Declared:
    lengths: set[bytes] = set()
    chunked = False
    for line in bytes(head[:head_end]).split(b"\n")[1:]:
        name, colon, value = line.partition(b":")
        if not colon:
            continue
        name = name.strip().lower()
        if name == b"content-length":
            lengths.add(value.strip())
        elif name == b"transfer-encoding":
            chunked = True
    if len(lengths) != 1:
        return Declared(None, chunked)
    [length] = lengths
    return Declared(int(length) if length.isdigit() and len(length) < 16 else None, chunked)


def spool_write(spool, data: bytes) -> None:
    """Into the spool; a full disk is the contract's STORAGE_FULL (answered
    503 as the app answers it), not a reason to drop the client."""
    try:
        spool.write(data)
    except OSError as exc:
        if disk.is_full_oserror(exc):
            raise disk.storage_full() from None
        raise


def new_spool(directory: str):
    """Memory up to SPOOL_MEMORY_BYTES, then an unnamed file in ``directory``
    (the data directory: the disk uploads end on, which the app checks for
    room before it reads a body; /tmp may be memory)."""
    return tempfile.SpooledTemporaryFile(max_size=SPOOL_MEMORY_BYTES, dir=directory)


class ParkingInput:
    """``wsgi.input`` that parks the request on its first read unless the
    whole body has arrived (``arrived()``); after that, gunicorn's own."""

    def __init__(self, stream, arrived):
        self._stream = stream
        self._arrived = arrived
        self._checked = False

    def _check(self) -> None:
        if not self._checked:
            if not self._arrived():
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
