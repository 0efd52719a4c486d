"""A request head read within its limits, at a cost linear in its size.

The service takes a request line of up to REQUEST_LINE_MAX_BYTES, header
fields (``Name: value``, as sent on one line) of up to HEADER_FIELD_MAX_BYTES,
at most HEADER_FIELDS_MAX of them and at most HEAD_MAX_BYTES in all: what
nginx and Apache pass by default, with room to spare (docs/connection.md).

``HeadScanner`` is fed the bytes of a connection as they arrive. Each byte is
looked at once, so a head costs time in proportion to its size, and a head
past a limit is refused as soon as the limit is crossed: nothing past it is
read. It finds where the head ends and nothing else; parsing the head is left
to gunicorn, which is given the whole head at once.
"""
from __future__ import annotations

from botsvc.errors import ApiError, ErrorCode

REQUEST_LINE_MAX_BYTES = 8190
HEADER_FIELD_MAX_BYTES = 8190
HEADER_FIELDS_MAX = 100
HEAD_MAX_BYTES = 65536

_REQUEST_ID_NAME = b"x-request-id:"


def line_too_long() -> ApiError:
    return ApiError(ErrorCode.URI_TOO_LONG,
                    f"The request line is longer than {REQUEST_LINE_MAX_BYTES} bytes",
                    limit=REQUEST_LINE_MAX_BYTES)


def field_too_long() -> ApiError:
    return ApiError(ErrorCode.HEADERS_TOO_LARGE,
                    f"A header field is longer than {HEADER_FIELD_MAX_BYTES} bytes",
                    limit=HEADER_FIELD_MAX_BYTES)


def too_many_fields() -> ApiError:
    return ApiError(ErrorCode.HEADERS_TOO_LARGE, f"More than {HEADER_FIELDS_MAX} header fields",
                    limit=HEADER_FIELDS_MAX)


def head_too_large() -> ApiError:
    return ApiError(ErrorCode.HEADERS_TOO_LARGE,
                    f"The request head is larger than {HEAD_MAX_BYTES} bytes",
                    limit=HEAD_MAX_BYTES)


def _whole_and_within_limits(chunk: bytes) -> bool:
    """Whether ``chunk`` begins with a whole head (CRLF line ends) within
    every limit. False means only that the line-by-line scan must tell."""
    end = chunk.find(b"\r\n\r\n")
    if end <= 0 or end + 4 > HEAD_MAX_BYTES:
        return False
    lines = chunk[:end].split(b"\r\n")
    return (len(lines) <= HEADER_FIELDS_MAX + 1 and 0 < len(lines[0]) <= REQUEST_LINE_MAX_BYTES
            and max(map(len, lines)) <= HEADER_FIELD_MAX_BYTES)


class HeadScanner:
    """Feed it what arrives; ``feed`` says whether the head is complete and
    raises the ApiError of the first limit crossed. ``data`` holds every byte
    fed (the head, then whatever followed it); ``request_id`` the value of an
    ``X-Request-Id`` line seen so far (for answers made before the app runs);
    ``head_end`` where the head ends in ``data`` once it is complete."""

    __slots__ = ("data", "complete", "request_id", "head_end", "_line_start", "_lines",
                 "_skipped_blank")

    def __init__(self) -> None:
        self.data = bytearray()
        self.complete = False
        self.request_id: str | None = None
        self.head_end = 0
        self._line_start = 0        # where the line being read starts in ``data``
        self._lines = 0             # lines read whole: the request line, then fields
        self._skipped_blank = False

    def feed(self, chunk: bytes) -> bool:
        if self.complete:
            self.data += chunk
            return True
        if not self.data and _whole_and_within_limits(chunk):
            self.data += chunk     # the usual case, in a few C calls
            self.complete = True
            self.head_end = chunk.find(b"\r\n\r\n") + 4
            return True
        data = self.data
        scan = len(data)
        data += chunk
        while True:
            end = data.find(b"\n", scan)
            if end < 0:
                break
            self._line(self._line_start, end)
            scan = self._line_start = end + 1
            if self.complete:
                self.head_end = scan
                return True
        # The unfinished line: one byte more than its limit allows its CR.
        if len(data) - self._line_start > self._line_limit() + 1:
            raise line_too_long() if self._lines == 0 else field_too_long()
        if len(data) > HEAD_MAX_BYTES:
            raise head_too_large()
        return False

    def _line_limit(self) -> int:
        return REQUEST_LINE_MAX_BYTES if self._lines == 0 else HEADER_FIELD_MAX_BYTES

    def _line(self, start: int, end: int) -> None:
        """The line from ``start`` to the LF at ``end``."""
        length = end - start
        if length and self.data[end - 1] == 0x0D:
            length -= 1
        if length == 0 and self._lines == 0 and not self._skipped_blank:
            self._skipped_blank = True   # RFC 9112 2.2: one empty line may precede a request
            return
        if length == 0 and self._lines > 0:
            self.complete = True
        elif length > self._line_limit():
            raise line_too_long() if self._lines == 0 else field_too_long()
        elif end + 1 > HEAD_MAX_BYTES:
            raise head_too_large()
        elif self._lines > HEADER_FIELDS_MAX:
            raise too_many_fields()
        elif self._lines and self.data[start:start + 13].lower() == _REQUEST_ID_NAME:
            self.request_id = bytes(self.data[start + 13:start + length]).strip(b" \t") \
                .decode("latin-1")
        self._lines += 1
