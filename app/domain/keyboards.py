"""Inline keyboards: the one ``reply_markup`` field of every method that takes
one (sendMessage, sendCard, the media sends and the edit methods).

The field validates to the letter of SPEC.md and returns the keyboard as it is
stored and echoed: empty rows are dropped (they show nothing), and a keyboard
left with no button at all becomes ``None``, which removes the buttons. An
error names ``reply_markup`` with the exact path, e.g.
``reply_markup.inline_keyboard.0.1.text``.
"""
from __future__ import annotations

import re
from urllib.parse import urlsplit

from marshmallow import ValidationError, fields, validate, validates_schema

from app.validation import StrictSchema, Text

MAX_ROWS = 10
MAX_BUTTONS_PER_ROW = 8
MAX_BUTTONS = 80
BUTTON_TEXT_MAX_BYTES = 128
URL_MAX_BYTES = 2048
CALLBACK_DATA_MAX_BYTES = 256
COPY_TEXT_MAX_BYTES = 256
ACTIONS = ("url", "callback_data", "copy_text")

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
    text = Text(min_bytes=1, max_bytes=BUTTON_TEXT_MAX_BYTES, required=True)
    url = Text(max_bytes=URL_MAX_BYTES, validate=[check_button_url])
    callback_data = Text(min_bytes=1, max_bytes=CALLBACK_DATA_MAX_BYTES)
    copy_text = Text(min_bytes=1, max_bytes=COPY_TEXT_MAX_BYTES)

    @validates_schema(skip_on_field_errors=True)
    def exactly_one_action(self, data, **kwargs):
        given = [action for action in ACTIONS if action in data]
        if len(given) != 1:
            raise ValidationError(
                f"a button needs exactly one of {', '.join(ACTIONS)} (got {len(given)})")


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


def stored_keyboard(markup: dict | None) -> dict | None:
    """Empty rows dropped; ``None`` when no button is left."""
    if markup is None:
        return None
    rows = [list(row) for row in markup["inline_keyboard"] if row]
    return {"inline_keyboard": rows} if rows else None


def callback_buttons(markup: dict | None) -> set[str]:
    """The callback_data values a user can click on a keyboard."""
    if not markup:
        return set()
    return {button["callback_data"] for row in markup["inline_keyboard"] for button in row
            if "callback_data" in button}

