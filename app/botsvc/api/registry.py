"""The /v2 methods in the catalogue. Each group module declares its methods
with ``@api_method``; the dispatcher looks them up by their case-sensitive
name. What an entry holds is described in app/botsvc/catalogue/entry.py."""
from __future__ import annotations

import sqlite3
from collections.abc import Callable
from dataclasses import dataclass, field
from typing import Any

from marshmallow import Schema

from botsvc.auth import Bot
from botsvc.catalogue.entry import Catalogue
from botsvc.catalogue.validation import UploadedFile
from botsvc.config import Settings
from botsvc.errors import ErrorCode


@dataclass
class Call:
    """Everything a handler may use: plain values and a connection."""
    conn: sqlite3.Connection
    settings: Settings
    bot: Bot
    method: str
    params: dict = field(default_factory=dict)
    files: dict[str, UploadedFile] = field(default_factory=dict)
    prepared: Any = None


METHODS = Catalogue("/v2")


def api_method(name: str, schema: Schema | None = None, *, result=None,
               errors: tuple[ErrorCode, ...] = (), summary: str = "",
               buckets: tuple[str, ...] = (), prepare: Callable[[Call], Any] | None = None,
               check_references=None, send_to_many=None, reaction: str | None = None):
    """Register a /v2 method (see ``Method`` for the keywords). Multipart file
    parts are the schema's FilePart and MediaInput fields."""
    return METHODS.register(name, schema, result=result, errors=errors, summary=summary,
                            buckets=buckets, prepare=prepare,
                            check_references=check_references, send_to_many=send_to_many,
                            reaction=reaction)


def reaction_methods() -> dict[str, str]:
    """``{method: what it changes in a chat}`` of every /v2 method whose
    success its chat's user sees (its entry's ``reaction``)."""
    return {name: m.reaction for name, m in METHODS.items() if m.reaction is not None}
