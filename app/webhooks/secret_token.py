"""The webhook secret_token (SPEC Updates rule 5, Authentication rule 6).

The token travels in exactly one place: the ``X-Platform-Bot-Secret-Token``
header of each delivery. It is never put in a URL, a log line, an error
text or getWebhookInfo. Receivers compare it in constant time
(``hmac.compare_digest``); we do not compare it on our side at all.
"""
from __future__ import annotations

import re

from app.errors import invalid

SECRET_HEADER = "X-Platform-Bot-Secret-Token"

_SECRET_TOKEN = re.compile(r"[A-Za-z0-9_-]{16,256}")


def is_valid_secret_token(token: object) -> bool:
    # fullmatch, not match with $: "$" would accept a trailing newline, which
    # would become a header-injection attempt.
    return isinstance(token, str) and _SECRET_TOKEN.fullmatch(token) is not None


def validate_secret_token(token: object) -> str:
    """setWebhook's check; the description never echoes the value."""
    if not is_valid_secret_token(token):
        raise invalid(
            "secret_token",
            "secret_token must be 16 to 256 ASCII letters, digits, '_' or '-'",
        )
    return token  # type: ignore[return-value]
