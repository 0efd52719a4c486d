"""One call of a /v2 method, with the contract's reliability built in.

- A mutating call (every method but the ``get*`` reads) carries an
  ``Idempotency-Key``: a new one per logical call, the same on each of its
  retries, so a retry after a lost answer replays the first result instead
  of doing the thing twice.
- No answer (a refused connection, a timeout) and a 5xx are retried after a
  backoff that doubles, with jitter; a 429 waits out its Retry-After (up to
  ``RetryPolicy.retry_after_max``, longer is raised); so does a key whose
  first request is still running (409 with ``in_progress``).
- Any other 4xx is raised at once: it needs a fix, not a retry.
- Every failure is one ``BotError``.

The HTTP client here is requests (the package's own dependency); the async
one is in aio.py. What both share is how a request is made and an answer read.
"""
from __future__ import annotations

import json
import os
import random
import time
import uuid
from dataclasses import dataclass
from typing import Any

import requests

from botsvc.bot.errors import INVALID_RESPONSE, NETWORK_ERROR, BotError


@dataclass(frozen=True)
class RetryPolicy:
    attempts: int = 6              # tries of one logical call, the first included
    backoff_first: float = 0.2     # seconds before the first retry of a 5xx or no answer
    backoff_max: float = 5.0
    retry_after_max: float = 60.0  # a longer Retry-After is raised to the caller
    timeout: float = 30.0          # one attempt's connect and read deadline

    def pause_before_retry(self, error: BotError, retry: int) -> float | None:
        """Seconds to wait before retry number ``retry`` (0-based) after
        ``error``, or None when it is not to be retried."""
        if not error.is_retryable or retry + 1 >= self.attempts:
            return None
        if error.retry_after is not None:
            return float(error.retry_after) if error.retry_after <= self.retry_after_max else None
        ceiling = min(self.backoff_max, self.backoff_first * 2 ** retry)
        return random.uniform(ceiling / 2, ceiling)   # jitter: retries of many bots spread out


def is_mutating(method: str) -> bool:
    """The reads are the ``get*`` methods (getUpdates acknowledges by its
    offset, which is idempotent by itself); everything else changes
    something and carries an Idempotency-Key."""
    return not method.startswith("get")


def new_idempotency_key() -> str:
    return f"sdk-{uuid.uuid4().hex}"


@dataclass(frozen=True)
class Request:
    """One attempt's request, the same bytes on every retry."""
    url: str
    headers: dict[str, str]
    json: dict[str, Any] | None
    data: dict[str, str] | None
    files: dict[str, tuple[str, bytes]] | None


def build_request(base_url: str, token: str, method: str, params: dict[str, Any],
                  idempotency_key: str | None) -> Request:
    """``None`` values are left out (the contract refuses JSON null). A
    parameter given as bytes, a path or an open file goes as a multipart
    file part, read once so that every retry sends the same bytes; a str is
    a file_id and stays JSON."""
    params = {k: v for k, v in params.items() if v is not None}
    headers = {"Authorization": f"Bearer {token}"}
    if idempotency_key is None and is_mutating(method):
        idempotency_key = new_idempotency_key()
    if idempotency_key is not None:
        headers["Idempotency-Key"] = idempotency_key
    url = f"{base_url.rstrip('/')}/v2/{method}"
    files = {name: _file_part(value) for name, value in params.items() if _is_file(value)}
    if not files:
        return Request(url, headers, params, None, None)
    data = {k: v if isinstance(v, str) else json.dumps(v)
            for k, v in params.items() if k not in files}
    return Request(url, headers, None, data, files)


def _is_file(value: Any) -> bool:
    return isinstance(value, (bytes, bytearray, os.PathLike, tuple)) or hasattr(value, "read")


def _file_part(value: Any) -> tuple[str, bytes]:
    if isinstance(value, tuple):          # (file name, bytes)
        name, content = value
        return name, bytes(content)
    if isinstance(value, (bytes, bytearray)):
        return "file", bytes(value)
    if isinstance(value, os.PathLike):
        with open(value, "rb") as fh:
            return os.path.basename(value), fh.read()
    return os.path.basename(getattr(value, "name", "file")), value.read()


def read_answer(method: str, status: int, headers, body: bytes) -> Any:
    """The ``result`` of a success, or the failure as BotError."""
    try:
        envelope = json.loads(body)
    except ValueError:
        raise BotError(INVALID_RESPONSE, f"not a JSON answer: {body[:200]!r}",
                       http_status=status, method=method) from None
    if 200 <= status < 300 and isinstance(envelope, dict) and envelope.get("ok") is True:
        return envelope.get("result")
    if not isinstance(envelope, dict):
        envelope = {}
    header = headers.get("Retry-After")
    retry_after_header = int(header) if header and header.isdigit() else None
    raise BotError(envelope.get("error_code") or INVALID_RESPONSE,
                   envelope.get("description") or "", envelope.get("parameters") or {},
                   http_status=status, retry_after=retry_after_header, method=method)


def network_error(method: str, exc: Exception) -> BotError:
    return BotError(NETWORK_ERROR, f"no answer: {type(exc).__name__}", method=method)


class Transport:
    """Calls with requests: one connection pool, kept alive."""

    def __init__(self, base_url: str, token: str, policy: RetryPolicy | None = None,
                 session: requests.Session | None = None):
        self.base_url, self.token = base_url.rstrip("/"), token
        self.policy = policy or RetryPolicy()
        self.session = session or requests.Session()

    def call(self, method: str, params: dict[str, Any], idempotency_key: str | None = None) -> Any:
        request = build_request(self.base_url, self.token, method, params, idempotency_key)
        retry = 0
        while True:
            try:
                return self._attempt(method, request)
            except BotError as error:
                pause = self.policy.pause_before_retry(error, retry)
                if pause is None:
                    raise
            time.sleep(pause)
            retry += 1

    def _attempt(self, method: str, request: Request) -> Any:
        try:
            response = self.session.post(request.url, headers=request.headers, json=request.json,
                                         data=request.data, files=request.files,
                                         timeout=self.policy.timeout)
        except requests.RequestException as exc:
            raise network_error(method, exc) from exc
        return read_answer(method, response.status_code, response.headers, response.content)

    def close(self) -> None:
        self.session.close()
