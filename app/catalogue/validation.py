"""Every request field, in one place, and the one translation of marshmallow's
errors into the contract's INVALID_PARAMETER with ``parameters.field``.

Method schemas (in the group modules, beside their handlers) are built from
these fields, so each rule of the contract is written once: the byte-length
validator, the identifiers, captions, keyboards, cards, pagination. The
OpenAPI document reads the same fields (``app/openapi/fields.py``).

Strictness is the point: JSON types are taken as they are (a boolean is not an
integer, ``"5"`` is not 5), unknown parameters are rejected, and text limits
count UTF-8 bytes.
"""
from __future__ import annotations

import re
from dataclasses import dataclass
from urllib.parse import urlsplit

from marshmallow import RAISE, Schema, ValidationError, fields, validate, validates_schema

from botsvc.contract import FILE_ID, MEDIA_TYPES, PARSE_MODES
from botsvc.domain.keyboards import stored_keyboard
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


# Inline keyboards (reply_markup). The field validates to the letter and
# loads the keyboard as it is stored and echoed: empty rows dropped, and a
# keyboard with no button left is None, which removes the buttons. Errors name
# ``reply_markup`` with the exact path (reply_markup.inline_keyboard.0.1.text).
MAX_ROWS = 10
MAX_BUTTONS_PER_ROW = 8
MAX_BUTTONS = 80
BUTTON_ACTIONS = ("url", "callback_data", "copy_text")
CALLBACK_DATA_MAX_BYTES = 256
# urlsplit silently drops tabs and newlines; refuse them (and spaces) first.
_UNSAFE_URL_CHARS = re.compile(r"[\x00-\x20\x7f]")


def check_button_url(url: str) -> str:
    if _UNSAFE_URL_CHARS.search(url):
        raise ValidationError("must not contain spaces or control characters")
    try:
        parts = urlsplit(url)
        parts.port  # noqa: B018  (raises ValueError for a malformed port)
    except ValueError:
        raise ValidationError("is not a valid URL") from None
    if parts.scheme.lower() != "https":
        raise ValidationError("must be an https:// URL")
    if not parts.hostname:
        raise ValidationError("must name a host")
    return url


class ButtonSchema(StrictSchema):
    text = Text(min_bytes=1, max_bytes=128, required=True)
    # The pattern states check_button_url for the document (it admits a little
    # more: a malformed port, an empty host after userinfo).
    url = Text(max_bytes=2048, validate=[check_button_url], metadata={
        "description": "an https:// URL with a host",
        "pattern": r"^[Hh][Tt][Tt][Pp][Ss]://[^\x00-\x20\x7f/?#]+([/?#][^\x00-\x20\x7f]*)?$"})
    callback_data = Text(min_bytes=1, max_bytes=CALLBACK_DATA_MAX_BYTES)
    copy_text = Text(min_bytes=1, max_bytes=256)

    # exactly_one_action, as JSON Schema (for the document): text is required
    # and nothing else is allowed, so two properties are text and one action.
    # (Not a oneOf of ``required`` lists: client generators read that as a
    # union of three empty types and lose the button's fields.)
    JSON_SCHEMA = {"minProperties": 2, "maxProperties": 2,
                   "description": f"text and exactly one of {', '.join(BUTTON_ACTIONS)}"}

    @validates_schema(skip_on_field_errors=True)
    def exactly_one_action(self, data, **kwargs):
        given = [action for action in BUTTON_ACTIONS if action in data]
        if len(given) != 1:
            raise ValidationError(
                f"a button needs exactly one of {', '.join(BUTTON_ACTIONS)} (got {len(given)})")


def check_total_buttons(rows: list) -> None:
    # Unreachable within 10 rows of 8 today, kept so the contract's third limit
    # holds on its own if the other two ever change.
    total = sum(len(row) for row in rows)
    if total > MAX_BUTTONS:
        raise ValidationError(f"at most {MAX_BUTTONS} buttons in total (got {total})")


class InlineKeyboardSchema(StrictSchema):
    inline_keyboard = fields.List(
        fields.List(fields.Nested(ButtonSchema),
                    validate=validate.Length(
                        max=MAX_BUTTONS_PER_ROW,
                        error=f"a row holds at most {MAX_BUTTONS_PER_ROW} buttons")),
        required=True,
        validate=[validate.Length(max=MAX_ROWS, error=f"at most {MAX_ROWS} rows"),
                  check_total_buttons])


class ReplyMarkup(fields.Nested):
    """``{inline_keyboard: [[button, ...], ...]}``; loads to the stored keyboard
    or ``None`` when it holds no button (an empty keyboard removes the buttons)."""

    def __init__(self, **kwargs):
        super().__init__(InlineKeyboardSchema, **kwargs)

    def _deserialize(self, value, attr, data, **kwargs):
        if not isinstance(value, dict):
            raise ValidationError("must be an object with inline_keyboard")
        return stored_keyboard(super()._deserialize(value, attr, data, **kwargs))


# Cards: sendCard, editMessageCard and broadcasts of sendCard.
CARD_TYPES = ("info", "product", "status", "receipt")
MAX_CARD_FIELDS = 12


class CardFieldSchema(StrictSchema):
    label = Text(min_bytes=1, max_bytes=128, required=True)
    value = Text(min_bytes=1, max_bytes=1024, required=True)


class CardSchema(StrictSchema):
    type = OneOf(CARD_TYPES, required=True)
    title = Text(min_bytes=1, max_bytes=256, required=True)
    text = Text(max_bytes=8192)
    subtitle = Text(max_bytes=512)
    fields = fields.List(fields.Nested(CardFieldSchema), validate=[validate.Length(
        max=MAX_CARD_FIELDS, error=f"at most {MAX_CARD_FIELDS} fields")])


def Card(**kwargs) -> fields.Nested:
    """The complete Card object; errors name ``card`` with the path inside it."""
    return fields.Nested(CardSchema, **kwargs)


# -- pagination (app/pagination.py reads the cursors) ---------------------------------

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
