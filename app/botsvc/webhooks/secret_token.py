"""The webhook secret_token.

The token travels in exactly one place: the ``X-Platform-Bot-Secret-Token``
header of each delivery. It is never put in a URL, a log line, an error
text or getWebhookInfo. Receivers compare it in constant time
(``hmac.compare_digest``); we do not compare it on our side at all.
"""
from __future__ import annotations

import re

SECRET_HEADER = "X-Platform-Bot-Secret-Token"

# \Z, not $: "$" would accept a trailing newline, which would become a
# header-injection attempt.
SECRET_TOKEN = re.compile(r"^[A-Za-z0-9_-]{16,256}\Z")


def is_valid_secret_token(token: object) -> bool:
    return isinstance(token, str) and SECRET_TOKEN.match(token) is not None
