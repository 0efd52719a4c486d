"""Where a chunked body ends (RFC 9112 7.1), found as its bytes arrive.

The worker's main loop reads a parked chunked body (app/botsvc/connection/body.py)
without a thread, so it must know where the body ends without decoding it for
the app: ``ChunkedEnd`` follows the framing (a size line, that many bytes and a
CRLF, again, then the last chunk and the trailers) and counts the bytes of
data, which are held to the same limit the app would hold them to. It checks
the framing as gunicorn's own ChunkedReader does, never more strictly: where
it finds a fault, gunicorn, reading the same bytes again in a thread, finds
the same one and answers its 400, so the main loop just stops there
(``Malformed``) and hands the request on.
"""
from __future__ import annotations

from botsvc.connection.body import too_large

SIZE_LINE_MAX_BYTES = 8190           # gunicorn's, for a chunk-size line
TRAILERS_MAX_BYTES = 8190 * 32       # gunicorn's, for the trailer section
_HEX = frozenset(b"0123456789abcdefABCDEF")


class Malformed(Exception):
    """The framing is not chunked framing; gunicorn answers it (400)."""


class ChunkedEnd:
    """Feed it a chunked body's bytes in order; ``feed`` returns how many of
    them belong to the body once its end is among them (None before).
    413 REQUEST_TOO_LARGE is raised once the data passes ``limit``."""

    def __init__(self, limit: int):
        self.limit = limit
        self.data_bytes = 0          # the body's data, without its framing
        self._state = "size"         # size, data, crlf, trailers
        self._line = bytearray()     # the size line or trailers read so far
        self._left = 0               # of the current chunk's data, or of its CRLF

    def feed(self, data: bytes) -> int | None:
        at, end = 0, len(data)
        while at < end:
            if self._state == "data":
                taken = min(self._left, end - at)
                self._left -= taken
                at += taken
                if self._left == 0:
                    self._state, self._left = "crlf", 2
            elif self._state == "crlf":
                if data[at] != b"\r\n"[2 - self._left]:
                    raise Malformed("no CRLF after a chunk's data")
                self._left -= 1
                at += 1
                if self._left == 0:
                    self._state = "size"
            else:
                at, done = self._line_bytes(data, at)
                if done:
                    return at
        return None

    def _line_bytes(self, data: bytes, at: int) -> tuple[int, bool]:
        """A size line, or the trailers: read up to their end (returns where
        that is in ``data``, and True after the trailers), or all of ``data``."""
        sizing = self._state == "size"
        terminator = b"\r\n" if sizing else b"\r\n\r\n"
        limit = SIZE_LINE_MAX_BYTES if sizing else TRAILERS_MAX_BYTES
        before = len(self._line)
        self._line += data[at:at + limit + len(terminator) - before]
        appended = len(self._line) - before
        if not sizing and self._line[:2] == b"\r\n":
            ends = 2                                  # no trailers
        else:
            found = self._line.find(terminator, max(0, before - len(terminator) + 1))
            if found < 0:
                if len(self._line) > limit:
                    raise Malformed("a chunk-size line or trailers without end")
                return at + appended, False
            ends = found + len(terminator)
        at += ends - before
        line, self._line = bytes(self._line[:ends - len(terminator)]), bytearray()
        if not sizing:
            return at, True
        size = self._size(line)
        if size == 0:
            self._state = "trailers"
        else:
            self.data_bytes += size
            if self.data_bytes > self.limit:
                raise too_large(self.limit)
            self._state, self._left = "data", size
        return at, False

    @staticmethod
    def _size(line: bytes) -> int:
        digits, semicolon, _ = line.partition(b";")
        if semicolon:
            digits = digits.rstrip(b" \t")
        if not digits or any(byte not in _HEX for byte in digits):
            raise Malformed("a chunk size that is not hexadecimal")
        return int(digits, 16)

