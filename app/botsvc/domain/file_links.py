"""Signed download links: a bearer capability for one file,
valid one hour.

``{base_url}/download.php?id=FILE_ID&exp=UNIX&sig=HEX`` where sig is
HMAC-SHA256 under the server's secret key over the file id, the owning bot's
id and exp. The bot id is not in the URL: the download route takes it from the
file's row, so a link stays bound to the bot that owned the file when it was
signed. Verification compares in constant time. ``exp`` is on the service
clock, so ``advanceClock 3601`` expires a link.
"""
from __future__ import annotations

import hashlib
import hmac
import re
from urllib.parse import urlencode

from botsvc import clock

LINK_VALIDITY_SECONDS = 3600
ROUTE = "/download.php"
_EXP = re.compile(r"^[1-9][0-9]{0,18}\Z")  # canonical: a signed link has one spelling
_SIG = re.compile(r"^[0-9a-f]{64}\Z")


def signature(secret_key: bytes, file_id: str, bot_id: int, exp: int) -> str:
    # Any text signs (a forged link may carry anything as its id); real
    # file_ids are ASCII, so their bytes are the same in every encoding.
    message = f"botsvc-download\n{file_id}\n{bot_id}\n{exp}".encode("utf-8", "surrogatepass")
    return hmac.new(secret_key, message, hashlib.sha256).hexdigest()


def signed_url(base_url: str, secret_key: bytes, file_id: str, bot_id: int,
               at: float | None = None) -> tuple[str, int]:
    """The download URL and its expiry (Unix seconds)."""
    exp = int(clock.time() if at is None else at) + LINK_VALIDITY_SECONDS
    query = urlencode({"id": file_id, "exp": exp,
                       "sig": signature(secret_key, file_id, bot_id, exp)})
    return f"{base_url}{ROUTE}?{query}", exp


def parse_exp(raw: str | None) -> int | None:
    return int(raw) if raw is not None and _EXP.match(raw) else None


def signature_matches(secret_key: bytes, file_id: str, bot_id: int, exp: int,
                      sig: str | None) -> bool:
    expected = signature(secret_key, file_id, bot_id, exp).encode("ascii")
    # Bytes on both sides: compare_digest refuses non-ASCII str, and a
    # malformed sig must be a plain mismatch, not an exception.
    presented = (sig or "").encode("utf-8", "surrogateescape")
    return hmac.compare_digest(expected, presented) and bool(_SIG.match(sig or ""))
