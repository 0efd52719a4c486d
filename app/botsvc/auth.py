"""Bot tokens: ``<bot id>:<43 URL-safe base64 characters>``, as the contract
fixes them.

Only a SHA-256 of the token is stored; with 256 random bits a slow hash adds
nothing. Comparison is constant-time, and a token never appears in a log, an
error or a response other than the one that issues it.
"""
from __future__ import annotations

import hashlib
import hmac
import re
import secrets
import sqlite3
from dataclasses import dataclass

from botsvc import clock
from botsvc.errors import ApiError, ErrorCode

_TOKEN = re.compile(r"^([1-9][0-9]{0,18}):([A-Za-z0-9_-]{43})\Z")
_DUMMY_HASH = hashlib.sha256(b"no such bot").digest()
_MAX_BOT_ID = 2 ** 63 - 1


@dataclass(frozen=True)
class Bot:
    id: int
    username: str
    display_name: str
    description: str
    disabled: bool
    has_faults: bool = False   # injectFault left calls to intercept (app/botsvc/domain/faults.py)

    @classmethod
    def from_row(cls, row: sqlite3.Row) -> Bot:
        return cls(row["id"], row["username"], row["display_name"], row["description"],
                   bool(row["disabled"]), bool(row["has_faults"]))


def new_token(bot_id: int) -> str:
    return f"{bot_id}:{secrets.token_urlsafe(32)}"


def token_secret(token: str | None) -> str:
    """The part of a token (``bot_id:secret``) that must never be shown or kept."""
    return (token or "").partition(":")[2]


def hash_token(token: str) -> bytes:
    return hashlib.sha256(token.encode("ascii")).digest()


def bearer_token(header_value: str | None) -> str | None:
    """The token from an ``Authorization: Bearer ...`` header, or None."""
    if not header_value:
        return None
    scheme, _, token = header_value.partition(" ")
    if scheme.lower() != "bearer":
        return None
    token = token.strip()
    return token or None


def unauthorized() -> ApiError:
    return ApiError(ErrorCode.UNAUTHORIZED, "Missing or invalid bot token")


def platform_disabled() -> ApiError:
    return ApiError(ErrorCode.PLATFORM_DISABLED, "The platform is disabled")


def bot_disabled() -> ApiError:
    return ApiError(ErrorCode.BOT_DISABLED, "This bot is disabled")


def authenticate_bot(conn: sqlite3.Connection, token: str | None) -> Bot:
    """The bot a token belongs to, after the platform switch: PLATFORM_DISABLED,
    then UNAUTHORIZED. Disabled bots are returned: the caller checks ``disabled``
    after the token, as the contract orders the checks."""
    bot, platform_is_disabled = identify_bot(conn, token)
    if platform_is_disabled:
        raise platform_disabled()
    if bot is None:
        raise unauthorized()
    return bot


def identify_bot(conn: sqlite3.Connection, token: str | None) -> tuple[Bot | None, bool]:
    """(the bot the token belongs to, or None; whether the platform is
    disabled), answering nothing: the caller decides what to refuse, in the
    contract's order. The token is checked even on a disabled platform, so
    that the call can go in its bot's call log. One query for both reads,
    since every request makes it; it also brings this process the service
    clock's offset and the bot's injected-faults flag."""
    match = _TOKEN.match(token or "")
    bot_id = int(match.group(1)) if match else 0
    if bot_id > _MAX_BOT_ID:
        match, bot_id = None, 0  # no such bot: SQLite cannot even hold the id
    row = conn.execute(_BOT_AND_PLATFORM, (bot_id,)).fetchone()
    clock.remember_offset(row["clock_offset"])
    presented = hash_token(token) if match else _DUMMY_HASH
    stored = row["token_hash"] if row["id"] is not None else _DUMMY_HASH
    # Compare even when the bot is unknown, so timing tells nothing.
    if not hmac.compare_digest(presented, stored) or row["id"] is None:
        return None, bool(row["platform_disabled"])
    return Bot.from_row(row), bool(row["platform_disabled"])


_BOT_AND_PLATFORM = (
    "SELECT p.disabled AS platform_disabled, p.clock_offset, b.id, b.username,"
    " b.display_name, b.description, b.disabled, b.has_faults, b.token_hash"
    " FROM platform p LEFT JOIN bots b ON b.id = ? WHERE p.id = 1")


def identify_bot_by_id(conn: sqlite3.Connection, bot_id: int) -> tuple[Bot | None, bool]:
    """What ``identify_bot`` answers, for a call the service itself makes as
    the bot, with no token (the testing tools' resendCall): the operator
    who asked for it is already authenticated."""
    row = conn.execute(_BOT_AND_PLATFORM, (bot_id,)).fetchone()
    clock.remember_offset(row["clock_offset"])
    bot = Bot.from_row(row) if row["id"] is not None else None
    return bot, bool(row["platform_disabled"])


def check_admin_token(presented: str | None, expected: str) -> bool:
    return presented is not None and hmac.compare_digest(
        presented.encode("utf-8", "surrogateescape"), expected.encode("utf-8", "surrogateescape")
    )
