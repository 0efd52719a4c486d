"""Every request field, in one place, and the one translation of marshmallow's
errors into the contract's INVALID_PARAMETER with ``parameters.field``.

Method schemas (in the group modules, beside their handlers) are built from
these fields, so each rule of the contract is written once: the byte-length
validator, the identifiers, captions, pagination (the objects inside
requests, keyboards and cards, are in ``markup.py``, built from these). The
OpenAPI document reads the same fields (``app/botsvc/openapi/fields.py``).

Strictness is the point: JSON types are taken as they are (a boolean is not an
integer, ``"5"`` is not 5), unknown parameters are rejected, and text limits
count UTF-8 bytes.
"""
from __future__ import annotations

import re
from dataclasses import dataclass

from marshmallow import RAISE, Schema, ValidationError, fields, validate

from botsvc.contract import FILE_ID, MEDIA_TYPES, PARSE_MODES
from botsvc.errors import ApiError, ErrorCode, invalid

TEXT_MAX_BYTES = 16384              # sendMessage, editMessageText, userSendMessage
CAPTION_MAX_BYTES = 4096


def utf8_len(text: str) -> int:
    return len(text.encode("utf-8"))


class ByteLength(validate.Validator):
    """The one byte-length check: ``min``/``max`` counted in UTF-8 bytes."""

    # Not ``min``/``max``: apispec would read those as a character Range.
    def __init__(self, min: int | None = None, max: int | None = None):
        self.min_bytes, self.max_bytes = min, max

    def __call__(self, value: str) -> str:
        size = utf8_len(value)
        if self.min_bytes is not None and size < self.min_bytes:
            raise ValidationError("must not be empty" if self.min_bytes == 1
                                  else f"must be at least {self.min_bytes} bytes")
        if self.max_bytes is not None and size > self.max_bytes:
            raise ValidationError(f"must be at most {self.max_bytes} bytes of UTF-8 (got {size})")
        return value


class Str(fields.String):
    """A JSON string and nothing else."""

    def _deserialize(self, value, attr, data, **kwargs):
        if not isinstance(value, str):
            raise ValidationError("must be a string")
        return value


INT64_MIN, INT64_MAX = -(2 ** 63), 2 ** 63 - 1


class Int(fields.Integer):
    """A JSON integer that fits SQLite's 64 bits; booleans, floats and numeric
    strings are refused."""

    def __init__(self, *, min: int | None = None, max: int | None = None, **kwargs):
        validators = list(kwargs.pop("validate", []) or [])
        if min is not None or max is not None:
            validators.append(validate.Range(min=min, max=max,
                                             error=_range_message(min, max)))
        super().__init__(validate=validators, **kwargs)

    def _deserialize(self, value, attr, data, **kwargs):
        if isinstance(value, bool) or not isinstance(value, int):
            raise ValidationError("must be an integer")
        if not INT64_MIN <= value <= INT64_MAX:
            raise ValidationError("must be a 64-bit signed integer")
        return value


class Bool(fields.Boolean):
    """A JSON ``true`` or ``false`` only."""

    def _deserialize(self, value, attr, data, **kwargs):
        if not isinstance(value, bool):
            raise ValidationError("must be a boolean")
        return value


def _range_message(min_: int | None, max_: int | None) -> str:
    if min_ is not None and max_ is not None:
        return f"must be an integer from {min_} to {max_}"
    if min_ is not None:
        return f"must be at least {min_}"
    return f"must be at most {max_}"


def Text(*, min_bytes: int | None = None, max_bytes: int | None = None, **kwargs) -> Str:
    """A string field with byte limits (the usual case for texts and captions)."""
    validators = list(kwargs.pop("validate", []) or [])
    validators.insert(0, ByteLength(min_bytes, max_bytes))
    return Str(validate=validators, **kwargs)


def Pattern(regex: str | re.Pattern, description: str, **kwargs) -> Str:
    return Str(validate=[validate.Regexp(re.compile(regex), error=description)], **kwargs)


def OneOf(choices, **kwargs) -> Str:
    return Str(validate=[validate.OneOf(choices, error="must be one of " + ", ".join(choices))],
               **kwargs)


class StrictSchema(Schema):
    """Base of every request schema: unknown parameters are an error."""

    class Meta:
        unknown = RAISE


# -- identifiers ---------------------------------------------------------------------

def ChatId(**kwargs) -> Str:
    """A chat_id: any non-empty string, however long; a string that is not one
    of the bot's chats is CHAT_NOT_FOUND (the contract), whatever its shape."""
    kwargs.setdefault("metadata", {"description": "a chat_id this bot received (vc_ and 40 "
                                                  "hex digits); any other string is "
                                                  "CHAT_NOT_FOUND"})
    return Text(min_bytes=1, **kwargs)


def MessageId(**kwargs) -> Int:
    return Int(min=1, **kwargs)


class FileId(Str):
    """A file_id string only (media groups, editMessageMedia). A Str, so a
    multipart text value stays text (never read as JSON)."""

    rule = "must be a file_id (48 lowercase hex characters); URLs and paths are not accepted"

    def _deserialize(self, value, attr, data, **kwargs):
        if isinstance(value, str) and FILE_ID.match(value):
            return value
        raise ValidationError(self.rule)


@dataclass
class UploadedFile:
    """A file part of a multipart request, already on disk in quarantine."""
    field: str
    path: str                 # private; never shown to a client
    file_name: str            # as the client sent it; display only
    content_type: str | None  # as declared by the client
    size: int
    sha256: str


class MediaInput(FileId):
    """A media method's file: a file_id string, or (multipart only) the file itself."""

    rule = ("must be a file_id (48 lowercase hex characters) or, in a multipart request,"
            " the file itself; URLs and paths are not accepted")

    def _deserialize(self, value, attr, data, **kwargs):
        if isinstance(value, UploadedFile):
            return value
        return super()._deserialize(value, attr, data, **kwargs)


class FilePart(fields.Field):
    """A file part of a multipart/form-data request, already in quarantine."""

    def _deserialize(self, value, attr, data, **kwargs):
        if not isinstance(value, UploadedFile):
            raise ValidationError("must be a file part of a multipart/form-data request")
        return value


# -- message content -----------------------------------------------------------------

def ParseMode(**kwargs) -> Str:
    return Str(validate=[validate.OneOf(PARSE_MODES, error="only 'plain' is supported")],
               **kwargs)


def Caption(**kwargs) -> Str:
    return Text(max_bytes=CAPTION_MAX_BYTES, **kwargs)


def MessageText(**kwargs) -> Str:
    return Text(min_bytes=1, max_bytes=TEXT_MAX_BYTES, **kwargs)


def MediaType(**kwargs) -> Str:
    return OneOf(MEDIA_TYPES, **kwargs)


# -- pagination (app/botsvc/pagination.py reads the cursors) ---------------------------------

DEFAULT_LIMIT = MAX_LIMIT = 100


def LimitField() -> Int:
    return Int(min=1, max=MAX_LIMIT, load_default=DEFAULT_LIMIT)


def CursorField() -> Str:
    # null is taken as "no cursor" (the first page), as clients often send it.
    return Text(min_bytes=1, max_bytes=512, load_default=None, allow_none=True,
                metadata={"description": "the next_cursor of the previous page; omit (or "
                                         "null) for the first page"})


# -- errors ----------------------------------------------------------------------------

def load(schema: Schema, params: dict) -> dict:
    """Validate ``params``; any failure becomes INVALID_PARAMETER naming the field."""
    try:
        return schema.load(params)
    except ValidationError as err:
        raise translate_error(err.messages) from None


def translate_error(messages) -> ApiError:
    path, message = _first_error(messages)
    if not path:
        return ApiError(ErrorCode.INVALID_PARAMETER, str(message), field="")
    top = path[0]
    dotted = ".".join(str(part) for part in path)
    if message == "Unknown field.":
        return invalid(dotted, f"Unknown parameter: {dotted}") if len(path) == 1 else \
            invalid(top, f"Unknown parameter: {dotted}", path=dotted)
    if message == "Missing data for required field.":
        message = "is required"
    elif message == "Field may not be null.":
        message = "must not be null"
    extra = {"path": dotted} if len(path) > 1 else {}
    return invalid(str(top), f"{dotted}: {message}", **extra)


def _first_error(messages, path=()):
    """The first error marshmallow reported, as (field path, message)."""
    if isinstance(messages, dict):
        for key, value in messages.items():
            if key == "_schema":
                return _first_error(value, path)
            return _first_error(value, (*path, key))
    if isinstance(messages, list) and messages:
        head = messages[0]
        if isinstance(head, (dict, list)):
            return _first_error(head, path)
        return path, head
    return path, str(messages)
