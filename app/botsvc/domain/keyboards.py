"""Inline keyboards as they are stored and echoed. The request field and its
rules are ``ReplyMarkup`` in app/botsvc/catalogue/validation.py; this is
what the domain does with a keyboard once it is valid.
"""
from __future__ import annotations


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
