"""The contract's facts, written once: the shapes of its identifiers, the
value sets and the limits it fixes. Validation, results, the domain and the OpenAPI document
all read them from here, so a shape cannot differ between what the service
accepts, what it returns and what it documents.

Patterns end in ``\\Z`` (``$`` would also match before a final newline); the
OpenAPI document writes them with ``$`` (``ecma``). This module imports
nothing of the project: everything may read it.
"""
from __future__ import annotations

import re

# chat_id: "vc_" and 40 lowercase hex digits, random per (bot, user) pair.
CHAT_ID_PREFIX = "vc_"
CHAT_ID_HEX_DIGITS = 40
CHAT_ID = re.compile(r"^vc_[0-9a-f]{40}\Z")
# file_id: 48 lowercase hex characters.
FILE_ID = re.compile(r"^[a-f0-9]{48}\Z")
# broadcast_id: "bc_" and 32 lowercase hex digits.
BROADCAST_ID = re.compile(r"^bc_[0-9a-f]{32}\Z")
# The Start parameter: 1 to 64 ASCII letters, digits, "_" or "-".
START_PARAMETER = re.compile(r"^[A-Za-z0-9_-]{1,64}\Z")
# An Idempotency-Key, and the X-Request-Id a client may bring: the same shape.
KEY = re.compile(r"^[A-Za-z0-9._:-]{1,128}\Z")
# A stored file's SHA-256, as File.sha256 and the download route's ETag show it.
SHA256 = re.compile(r"^[0-9a-f]{64}\Z")

# The six single-media send methods' types (Message.type of a media message).
MEDIA_TYPES = ("photo", "voice", "video", "audio", "document", "animation")
# File.kind.
FILE_KINDS = ("photo", "video", "animation", "audio", "document")
# parse_mode: only plain text is supported.
PARSE_MODES = ("plain",)

# userGetChat's page: 1 to 1000 messages, 100 when not given.
USER_CHAT_MAX_LIMIT = 1000
USER_CHAT_DEFAULT_LIMIT = 100
# How long an operator read may wait for what it waits for (wait_ms:
# getBotCalls, userGetChat; docs/testing-tools.md#waiting-without-polling).
OPERATOR_WAIT_MAX_MS = 10_000

# How long the service keeps what it keeps for a day, in service time: pending
# updates, Idempotency-Key records, webhook delivery records, the call log.
RETENTION_SECONDS = 24 * 3600

# The bots' call log (getBotCalls): what is kept of each bot, and the bound on
# a record's params and result (each one's compact JSON, in bytes).
CALL_LOG_KEPT_CALLS = 1000
CALL_LOG_BODY_MAX_BYTES = 16 * 1024
# With getBotCalls detail, each field of params left out for size, cut to this.
CALL_LOG_PREVIEW_MAX_BYTES = 256


def ecma(pattern: re.Pattern | str) -> str:
    """A pattern as JSON Schema writes it (ECMA-262 has no ``\\Z``)."""
    text = pattern.pattern if isinstance(pattern, re.Pattern) else pattern
    return text.replace("\\Z", "$")
