"""Request parsing and validation: strict marshmallow fields, the one
byte-length validator, and the translation of marshmallow's errors into the
contract's INVALID_PARAMETER with ``parameters.field``.

Strictness is the point: JSON types are taken as they are (a boolean is not an
integer, ``"5"`` is not 5), unknown parameters are rejected, and text limits
count UTF-8 bytes.
"""
from __future__ import annotations

import re

from marshmallow import RAISE, Schema, ValidationError, fields, validate

from app.errors import ApiError, ErrorCode, invalid


def utf8_len(text: str) -> int:
    return len(text.encode("utf-8"))


class ByteLength(validate.Validator):
    """The one byte-length check: ``min``/``max`` counted in UTF-8 bytes."""

    def __init__(self, min: int | None = None, max: int | None = None):
        self.min, self.max = min, max

    def __call__(self, value: str) -> str:
        size = utf8_len(value)
        if self.min is not None and size < self.min:
            raise ValidationError("must not be empty" if self.min == 1
                                  else f"must be at least {self.min} bytes")
        if self.max is not None and size > self.max:
            raise ValidationError(f"must be at most {self.max} bytes of UTF-8 (got {size})")
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


def Pattern(regex: str, description: str, **kwargs) -> Str:
    return Str(validate=[validate.Regexp(re.compile(regex), error=description)], **kwargs)


def ChatId(**kwargs) -> Str:
    """A chat_id: any non-empty string, however long; a string that is not one
    of the bot's chats is CHAT_NOT_FOUND (DECISIONS §4), whatever its shape."""
    return Text(min_bytes=1, **kwargs)


def MessageId(**kwargs) -> Int:
    return Int(min=1, **kwargs)


def ParseMode(**kwargs) -> Str:
    return Str(validate=[validate.OneOf(["plain"], error="only 'plain' is supported")], **kwargs)


class StrictSchema(Schema):
    """Base of every request schema: unknown parameters are an error."""

    class Meta:
        unknown = RAISE


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


def field_error(field: str, message: str) -> ValidationError:
    """For ``@validates_schema`` checks: report ``message`` against ``field``."""
    return ValidationError(message, field_name=field)
