"""Where a request head ends, and its limits (app/botsvc/connection/request_head.py), fed as a
connection delivers bytes: whole, in pieces, one byte at a time."""
from __future__ import annotations

import pytest

from botsvc.connection.request_head import (
    HEAD_MAX_BYTES,
    HEADER_FIELD_MAX_BYTES,
    HEADER_FIELDS_MAX,
    REQUEST_LINE_MAX_BYTES,
    HeadScanner,
)
from botsvc.errors import ApiError

HEAD = b"POST /v2/getMe HTTP/1.1\r\nHost: x\r\nContent-Length: 2\r\n\r\n"


def pieces(data: bytes, size: int) -> list[bytes]:
    return [data[i:i + size] for i in range(0, len(data), size)]


def scan(data: bytes, size: int | None = None) -> HeadScanner:
    scanner = HeadScanner()
    for piece in pieces(data, size or len(data) or 1):
        scanner.feed(piece)
    return scanner


def refusal(data: bytes, size: int | None = None) -> tuple[int, str, dict]:
    with pytest.raises(ApiError) as refused:
        scan(data, size)
    return refused.value.http_status, refused.value.code, refused.value.parameters


@pytest.mark.parametrize("size", [None, 1, 2, 7, 64])
def test_the_head_ends_at_the_blank_line_whatever_the_pieces(size):
    scanner = scan(HEAD + b"{}", size)
    assert scanner.complete
    assert bytes(scanner.data) == HEAD + b"{}"   # what followed the head is kept for the parser


@pytest.mark.parametrize("size", [None, 1, 5])
def test_an_unfinished_head_is_not_complete(size):
    assert not scan(HEAD[:-2], size).complete
    assert not scan(HEAD[:-1], size).complete


def test_one_empty_line_may_come_before_the_request_line():
    assert scan(b"\r\n" + HEAD).complete
    assert not scan(b"\r\n").complete


def line_of(length: int) -> bytes:
    target = b"/v2/getMe?p=" + b"a" * (length - len(b"POST /v2/getMe?p= HTTP/1.1"))
    line = b"POST " + target + b" HTTP/1.1"
    assert len(line) == length
    return line


@pytest.mark.parametrize("size", [None, 1, 1000])
def test_the_request_line_limit(size):
    assert scan(line_of(REQUEST_LINE_MAX_BYTES) + b"\r\n\r\n", size).complete
    refused = (414, "URI_TOO_LONG", {"limit": REQUEST_LINE_MAX_BYTES})
    assert refusal(line_of(REQUEST_LINE_MAX_BYTES + 1) + b"\r\n\r\n", size) == refused
    # Refused before the line ends: the rest is never waited for.
    assert refusal(line_of(REQUEST_LINE_MAX_BYTES + 2), size) == refused


@pytest.mark.parametrize("size", [None, 1, 1000])
def test_the_field_limit(size):
    def field(length):
        return b"X-Long: " + b"v" * (length - len(b"X-Long: "))
    assert scan(b"GET / HTTP/1.1\r\n" + field(HEADER_FIELD_MAX_BYTES) + b"\r\n\r\n", size).complete
    refused = (431, "HEADERS_TOO_LARGE", {"limit": HEADER_FIELD_MAX_BYTES})
    assert refusal(b"GET / HTTP/1.1\r\n" + field(HEADER_FIELD_MAX_BYTES + 1) + b"\r\n\r\n",
                   size) == refused
    assert refusal(b"GET / HTTP/1.1\r\n" + field(HEADER_FIELD_MAX_BYTES + 2), size) == refused


def test_the_field_count_limit_counts_lines_as_sent():
    def head(fields):
        return b"GET / HTTP/1.1\r\n" + b"X-A: v\r\n" * fields + b"\r\n"
    assert scan(head(HEADER_FIELDS_MAX)).complete
    assert refusal(head(HEADER_FIELDS_MAX + 1)) == (431, "HEADERS_TOO_LARGE",
                                                    {"limit": HEADER_FIELDS_MAX})


def test_the_whole_head_limit():
    field = b"X-A: " + b"v" * 8000 + b"\r\n"
    fields = (HEAD_MAX_BYTES - 100) // len(field)
    assert scan(b"GET / HTTP/1.1\r\n" + field * fields + b"\r\n").complete
    refused = (431, "HEADERS_TOO_LARGE", {"limit": HEAD_MAX_BYTES})
    assert refusal(b"GET / HTTP/1.1\r\n" + field * (fields + 1) + b"\r\n") == refused
    assert refusal(b"GET / HTTP/1.1\r\n" + field * (fields + 1), 4096) == refused


def test_the_request_id_seen_so_far_is_kept():
    scanner = scan(b"GET / HTTP/1.1\r\nx-request-ID:  probe-1 \r\nHost: x\r\n")
    assert scanner.request_id == "probe-1"
    assert HeadScanner().request_id is None


def test_a_bare_lf_ends_lines_too():
    # gunicorn refuses such a head (400); it must not be left waiting for more.
    assert scan(b"GET / HTTP/1.1\nHost: x\n\n").complete
