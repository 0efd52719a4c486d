"""A call's record, made from what the dispatcher saw of the call and its
answer (docs/call-log.md): plain values, no Flask.

Every call pays for this, so it reads each value once: a success's
``result`` is a slice of the answer's bytes, never encoded again, and a
short JSON body is kept as it was sent. A record never holds a token, a
secret parameter (a field the catalogue marks ``secret``), a header but the
Idempotency-Key, or file bytes: a file part is ``{file_name, size}``; the
bot's own token, where the bot put it in a value, is ``[token]``, a secret
parameter's value ``[secret]`` wherever it appears.
"""
from __future__ import annotations

from collections.abc import Callable
from typing import Any

from botsvc import clock
from botsvc.auth import token_secret
from botsvc.call_log.facts import CallFacts
from botsvc.catalogue.body import RequestBody
from botsvc.contract import KEY
from botsvc.domain.call_log import BODY_MAX_BYTES, PREVIEW_MAX_BYTES, CallRecord, within_bound
from botsvc.jsontext import dumps

_SUCCESS_PREFIX = b'{"ok":true,"result":'
_EMPTY_POLL = _SUCCESS_PREFIX + b"[]}"
REDACTED = "[token]"
SECRET_MARK = "[secret]"
_REDACTED_BYTES = REDACTED.encode()
# A JSON body this short is kept as it was sent: its compact form could not
# reach the bound (only a number written with an exponent grows when written
# again, 1e15 to 1000000000000000.0: under 5 times).
_RAW_KEPT_MAX_BYTES = BODY_MAX_BYTES // 5
# A message's result (detail's ``result_whole``) is kept whole up to this:
# the contract's largest (a 16 KiB text of characters JSON escapes six times
# over, with 80 buttons of 2 KiB URLs) is under it.
WHOLE_RESULT_MAX_BYTES = 1024 * 1024
# A secret value is also replaced where else it appears (a URL holding it)
# from this length on: a shorter one (refused anyway: secrets are 16
# characters or more) would replace common text, keys included.
_SECRET_TEXT_MIN = 8


class Outcome:
    """What a call's record takes from its answer: the status, bytes (a
    success's), envelope (read only for a failure), whether it was a
    replay, and its duration and request id."""
    __slots__ = ("status", "data", "failure", "replayed", "duration_ms", "request_id")

    def __init__(self, status: int, data: bytes, failure: Callable[[], dict], replayed: bool,
                 duration_ms: float, request_id: str):
        self.status, self.data, self.failure = status, data, failure
        self.replayed, self.duration_ms, self.request_id = replayed, duration_ms, request_id


def make(seen: CallFacts, outcome: Outcome
         ) -> tuple[CallRecord | None, tuple[int, int, bool] | None]:
    """The call's record (None for an empty poll), and for a getUpdates
    ``(bot_id, date, empty)``: from what the dispatcher saw of the call (its
    CallFacts, with a known bot) and its answer."""
    bot_id, method = seen.bot_id, seen.method
    # Before the answer is sent: the bot acts on it after this.
    answered_ns = clock.order_stamp()
    # The machine's time at arrival, with the service clock's offset as the
    # token query refreshed it.
    date = int(seen.arrived_at + clock.offset())
    data = outcome.data if outcome.status == 200 else b""
    poll = None
    if method == "getUpdates":
        poll = (bot_id, date, data == _EMPTY_POLL)
        if poll[2]:
            return None, poll
    entry = seen.entry
    scrub = _Scrub(token_secret(seen.token).encode(), seen.body,
                   entry.secret_fields if entry is not None else ())
    params, params_over = _params(seen.body, scrub)
    result, result_over = _result(data, scrub)
    failure = outcome.failure() if outcome.status != 200 else {}
    detail = _detail(seen, failure, scrub, params_over, result_over, data)
    # The Idempotency-Key when it is one (an invalid one is refused unused).
    key = seen.key if seen.key is not None and KEY.match(seen.key) else None
    return CallRecord(
        bot_id, date, method, outcome.status, outcome.duration_ms, outcome.request_id,
        _text(failure.get("error_code")), scrub.text(failure.get("description")), key,
        key is not None and outcome.replayed,
        params, result, params_over or result_over, detail, seen.arrived_ns,
        answered_ns), poll


class _Scrub:
    """What no record may hold: the bot's token (its secret part) and the
    values of the call's secret parameters."""
    __slots__ = ("pairs", "fields")

    def __init__(self, token_secret: bytes, body: RequestBody | None, secret_fields):
        # Every call makes one: the common case (no secret parameter) is kept short.
        self.pairs = [(token_secret, _REDACTED_BYTES)] if token_secret else []
        self.fields = ()
        if not secret_fields or body is None or not isinstance(body.params, dict):
            return
        params = body.params
        self.fields = tuple(name for name in secret_fields if name in params)
        for name in self.fields:
            value = params[name]
            if isinstance(value, str) and len(value) >= _SECRET_TEXT_MIN:
                # As JSON spells it: the replacement stays inside its string.
                self.pairs.append((dumps(value)[1:-1].encode(), SECRET_MARK.encode()))

    def json(self, json_text: bytes | None) -> bytes | None:
        """The text with each secret replaced: their characters need no
        escaping in JSON (or are matched escaped), so the text stays valid."""
        for needle, mark in self.pairs:
            if json_text is not None and needle in json_text:
                json_text = json_text.replace(needle, mark)
        return json_text

    def text(self, value) -> str | None:
        if not isinstance(value, str):
            return None
        for needle, mark in self.pairs:
            plain = needle.decode()
            if plain in value:
                value = value.replace(plain, mark.decode())
        return value


def _params(body: RequestBody | None, scrub: _Scrub) -> tuple[bytes | None, bool]:
    """The parameters as sent, and whether they were over the bound. None
    (not over) when the body was not read: refused before it, too large, or
    not JSON."""
    if body is None or body.raw_sha256 is not None:
        return None, False
    raw = body.raw
    if (raw is not None and len(raw) <= _RAW_KEPT_MAX_BYTES and b"\\u" not in raw
            and not scrub.fields):
        return scrub.json(raw), False   # (\u escapes could spell the token)
    kept = within_bound(dumps(_plain_params(body, scrub)).encode())
    return scrub.json(kept), kept is None


def _plain_params(body: RequestBody, scrub: _Scrub) -> dict:
    params = body.params
    if body.files:
        params = {**params, **{name: {"file_name": part.file_name, "size": part.size}
                               for name, part in body.files.items()}}
    if scrub.fields:
        params = {**params, **dict.fromkeys(scrub.fields, SECRET_MARK)}
    return params


def _result(data: bytes, scrub: _Scrub) -> tuple[bytes | None, bool]:
    """A success's ``result``: the answer without its envelope."""
    if not data.startswith(_SUCCESS_PREFIX):
        return None, False
    kept = within_bound(data[len(_SUCCESS_PREFIX):-1])
    return scrub.json(kept), kept is None


def _detail(seen: CallFacts, failure: dict, scrub: _Scrub, params_over: bool, result_over: bool,
            data: bytes) -> bytes | None:
    """What getBotCalls shows with ``detail: true`` (None: nothing): the
    failure's parameters, the injected fault or delay, the call it re-sent
    (resendCall's), for params left out for size a bounded preview of each
    field, and a message's result left out for size whole (``result_whole``)."""
    detail: dict[str, Any] = {}
    parameters = failure.get("parameters")
    if isinstance(parameters, dict) and parameters:
        detail["error_parameters"] = parameters
    injected = _injected(seen.fault)
    if injected:
        detail["injected"] = injected
    if seen.resent_from is not None:
        detail["resent_from"] = seen.resent_from
    if params_over:
        detail["params_preview"], detail["cut_fields"] = _preview(
            _plain_params(seen.body, scrub), scrub)
    whole = _whole_messages(scrub.json(data)) if result_over else None
    if not detail and whole is None:
        return None
    kept = within_bound(scrub.json(dumps(detail).encode())) or b"{}"
    if whole is not None:
        kept = kept[:-1] + (b"," if len(kept) > 2 else b"") + b'"result_whole":' + whole + b"}"
    return kept


def _whole_messages(data: bytes) -> bytes | None:
    """A success's result over the record's bound, when it is the message(s)
    the bot sent or edited (a 16 KiB text with its keyboard, a card, an
    album): kept whole, so that what the chat's user saw can be exported and
    replayed. A Message's JSON starts with its message_id; the contract's
    maxima keep one under WHOLE_RESULT_MAX_BYTES."""
    whole = data[len(_SUCCESS_PREFIX):-1]
    if not whole.startswith((b'{"message_id":', b'[{"message_id":')):
        return None
    return whole if len(whole) <= WHOLE_RESULT_MAX_BYTES else None


def _injected(fault) -> dict | None:
    """A fault of the testing tools applied to the call: {error_code?, delay_ms?}."""
    if fault is None:
        return None
    injected: dict[str, Any] = {}
    if fault.error_code is not None:
        injected["error_code"] = fault.error_code.value
    if fault.delay_ms:
        injected["delay_ms"] = fault.delay_ms
    return injected or None


def _preview(params: dict, scrub: _Scrub) -> tuple[dict[str, str], list[str]]:
    """Each field as its text (a string's own, else its compact JSON), cut
    to PREVIEW_MAX_BYTES, and the names of those cut; fields stop once the
    preview reaches the record's bound (those left out are not named)."""
    preview, cut, size = {}, [], 0
    for name, value in params.items():
        # Scrubbed before the cut, which could leave half a secret.
        text = scrub.json((value if isinstance(value, str) else dumps(value)).encode())
        if len(text) > PREVIEW_MAX_BYTES:
            text = text[:PREVIEW_MAX_BYTES]
            cut.append(name)
        size += len(name.encode()) + len(text) + 8
        if size > BODY_MAX_BYTES // 2:
            if cut and cut[-1] == name:
                cut.pop()
            break
        preview[name] = text.decode(errors="ignore")   # a character cut in two is left out
    return preview, cut


def _text(value) -> str | None:
    return value if isinstance(value, str) else None
