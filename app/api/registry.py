"""The table of /v2 methods. Each group module declares its methods with
``@api_method``; the dispatcher looks them up by their case-sensitive name."""
from __future__ import annotations

import sqlite3
from collections.abc import Callable
from dataclasses import dataclass, field
from typing import Any

from marshmallow import Schema

from app.auth import Bot
from app.body import UploadedFile
from app.config import Settings


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


@dataclass(frozen=True)
class ApiMethod:
    name: str
    handler: Callable[[Call], Any]
    schema: Schema | None
    # Rate-limit buckets beyond "api", which every method consumes.
    buckets: tuple[str, ...] = ()
    # Slow work (media tools) run outside the write transaction, before handler.
    prepare: Callable[[Call], Any] | None = None
    # Multipart file parts this method accepts; they arrive in params as UploadedFile.
    file_fields: tuple[str, ...] = ()
    # check_references(conn, bot_id, params): what the parameters refer to
    # (file_ids) is this bot's and usable, checked without a recipient, so that
    # createBroadcast refuses a bad payload even with no member to try it on.
    check_references: Callable[[sqlite3.Connection, int, dict], None] | None = None


METHODS: dict[str, ApiMethod] = {}


def api_method(name: str, schema: Schema | None = None, *, buckets: tuple[str, ...] = (),
               prepare: Callable[[Call], Any] | None = None,
               file_fields: tuple[str, ...] = (), check_references=None):
    def register(handler):
        if name in METHODS:
            raise RuntimeError(f"method {name} registered twice")
        METHODS[name] = ApiMethod(name, handler, schema, buckets, prepare, file_fields,
                                  check_references)
        return handler
    return register
