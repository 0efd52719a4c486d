"""The one pagination helper: ``limit`` 1 to 100, default
100 (the request fields are LimitField and CursorField in app/botsvc/catalogue/validation.py); an
opaque ``cursor`` that is omitted on the first request and echoed from
the previous ``next_cursor`` afterwards; ``next_cursor`` is null at the end.

Pages are keyset pages: a page is "the next ``limit`` rows after the key the
cursor names", so rows added or removed between requests never shift later
pages. A method supplies the query (``fetch``) and how its cursor maps to a
key (a ``CursorCodec``); this module does the rest.
"""
from __future__ import annotations

import base64
import binascii
import re
from collections.abc import Callable, Sequence
from dataclasses import dataclass
from typing import Any

from botsvc.errors import ApiError, invalid

SQLITE_MAX_INTEGER = 2**63 - 1


def bad_cursor() -> ApiError:
    return invalid("cursor", "cursor must be a next_cursor returned by a previous call")


class CursorCodec:
    """Turns a page's last key into a cursor and back; ``decode`` raises
    INVALID_PARAMETER (field ``cursor``) for anything it did not make."""

    def encode(self, key: Any) -> str:
        raise NotImplementedError

    def decode(self, cursor: str) -> Any:
        raise NotImplementedError


@dataclass(frozen=True)
class PatternCursor(CursorCodec):
    """The key itself is the cursor (the subscriber cursor is a public chat_id)."""
    pattern: re.Pattern

    def encode(self, key: str) -> str:
        return key

    def decode(self, cursor: str) -> str:
        if not self.pattern.fullmatch(cursor):
            raise bad_cursor()
        return cursor


@dataclass(frozen=True)
class ScopedIntCursor(CursorCodec):
    """An integer key bound to one scope (say, one broadcast), wrapped so that
    clients treat it as opaque and a cursor of another scope is refused."""
    scope: str

    def encode(self, key: int) -> str:
        raw = f"{self.scope}:{key}".encode()
        return base64.urlsafe_b64encode(raw).decode().rstrip("=")

    def decode(self, cursor: str) -> int:
        try:
            raw = base64.urlsafe_b64decode(cursor + "=" * (-len(cursor) % 4)).decode()
        except (binascii.Error, UnicodeDecodeError, ValueError):
            raise bad_cursor() from None
        scope, _, key = raw.rpartition(":")
        if scope != self.scope or not key.isascii() or not key.isdigit() \
                or int(key) > SQLITE_MAX_INTEGER or self.encode(int(key)) != cursor:
            raise bad_cursor()
        return int(key)


def page(fetch: Callable[[Any, int], Sequence], key_of: Callable[[Any], Any],
         limit: int, cursor: str | None, codec: CursorCodec) -> tuple[list, str | None]:
    """One page: ``fetch(after_key_or_None, n)`` returns up to ``n`` rows in key
    order after the key. Fetching one row more than asked tells whether another
    page exists, so ``next_cursor`` is null exactly at the end."""
    after = codec.decode(cursor) if cursor is not None else None
    rows = list(fetch(after, limit + 1))
    if len(rows) <= limit:
        return rows, None
    rows = rows[:limit]
    return rows, codec.encode(key_of(rows[-1]))
