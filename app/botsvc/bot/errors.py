"""The SDK's one error type: every failure a call ends with, whether the
service answered one (in the contract's envelope) or the network gave up."""
from __future__ import annotations

from typing import Any

# error_code of a failure the service did not answer: the network failed on
# every attempt, or the answer was not the contract's envelope.
NETWORK_ERROR = "NETWORK_ERROR"
INVALID_RESPONSE = "INVALID_RESPONSE"


class BotError(Exception):
    """A failed call: ``error_code``, ``description`` and ``parameters`` as
    the envelope gave them, ``retry_after`` (seconds, from ``parameters``
    or the Retry-After header) and ``http_status`` (None when no answer
    came)."""

    def __init__(self, error_code: str, description: str, parameters: dict[str, Any] | None = None,
                 *, http_status: int | None = None, retry_after: int | None = None,
                 method: str = ""):
        self.error_code = error_code
        self.description = description
        self.parameters = dict(parameters or {})
        self.http_status = http_status
        given = self.parameters.get("retry_after")
        self.retry_after = given if isinstance(given, int) else retry_after
        self.method = method
        where = f"{method}: " if method else ""
        super().__init__(f"{where}{error_code} ({http_status}): {description}")

    @property
    def is_retryable(self) -> bool:
        """What the SDK retries by itself: no answer, a 5xx, a 429, and a key
        whose first request is still running (IDEMPOTENCY_CONFLICT with
        ``in_progress``). Any other 4xx needs a fix first."""
        if self.http_status is None:
            return self.error_code == NETWORK_ERROR
        if self.http_status >= 500 or self.http_status == 429:
            return True
        return (self.error_code == "IDEMPOTENCY_CONFLICT"
                and self.parameters.get("in_progress") is True)
