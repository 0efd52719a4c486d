"""The objects inside requests: inline keyboards (``reply_markup``) and
cards, built from the request fields of ``validation.py``, so their byte
limits and strictness are the same rules. Results echo them with the same
schemas (``results.py``), and the OpenAPI document reads them from here.
"""
from __future__ import annotations

import re
from urllib.parse import urlsplit

from marshmallow import ValidationError, fields, validate, validates_schema

from botsvc.catalogue.validation import OneOf, StrictSchema, Text
from botsvc.domain.keyboards import stored_keyboard

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
