"""TXT, CSV, LOG and JSON documents: strict UTF-8 plain text.

Rules: at most 5 MiB; valid UTF-8 (a leading BOM is removed); no control
characters except tab, CR and LF, and none of the bidi embedding, override
and isolate characters used to disguise text ("Trojan Source"); no active
markup; JSON must parse as standard JSON (no NaN or Infinity).

"Active markup" is markup that a browser, an XML tool or a server-side
template would act on if the file were ever sniffed or served as HTML, SVG,
XML or PHP:
- an opening or closing tag of script, iframe, frame, frameset, object,
  embed, applet, svg, math, html, meta, base, link, style, form or xml;
- ``<!DOCTYPE``, ``<?xml``, ``<?php`` and ``<?=``;
- any tag with an ``on...=`` event-handler attribute, or a ``javascript:``
  or ``vbscript:`` URL inside a tag.
Ordinary text with angle brackets (``a < b``, ``<stdin>``, ``<module>``,
``<br>``) passes. The cost: a log that quotes such markup (or Python's
``<object object at 0x...>``) is rejected.
"""
from __future__ import annotations

import json
import os
import re
from dataclasses import dataclass

from botsvc.errors import Reason, media_rejected

MAX_BYTES = 5 * 1024 * 1024
BOM = b"\xef\xbb\xbf"

_CONTROL = re.compile("[\x00-\x08\x0b\x0c\x0e-\x1f\x7f-\x9f\u202a-\u202e\u2066-\u2069]")
_ACTIVE_TAGS = (
    "script|iframe|frame|frameset|object|embed|applet|svg|math|html|meta|base|link|style|form|xml"
)
_MARKUP = re.compile(
    rf"<\s*/?\s*(?:{_ACTIVE_TAGS})(?=[\s/>])"
    r"|<!doctype|<\?(?:xml|php|=)"
    # HTML also splits attributes at "/" and right after a quoted value:
    # <img/src=x/onerror=...> and <a href="x"onclick=...> are handlers too.
    r"|<[a-z][^<>]*?(?<![a-z0-9_-])on[a-z]+\s*="
    r"|<[a-z][^<>]*(?:javascript|vbscript)\s*:",
    re.IGNORECASE,
)
_OUTPUT = {"txt": "text/plain", "log": "text/plain", "csv": "text/csv", "json": "application/json"}


@dataclass
class TextResult:
    path: str
    ext: str
    mime: str
    metadata: dict


def _reject_constant(name: str):
    raise ValueError(f"{name} is not JSON")


def normalize_text(src: str, ext: str, out_dir: str, field: str) -> TextResult:
    if os.path.getsize(src) > MAX_BYTES:
        raise media_rejected(field, Reason.TEXT_TOO_LARGE, "Text documents are limited to 5 MiB")
    with open(src, "rb") as fh:
        data = fh.read(MAX_BYTES + 1)
    if data.startswith(BOM):
        data = data[len(BOM):]
    if not data:
        raise media_rejected(field, Reason.EMPTY_FILE, "The file is empty")
    try:
        text = data.decode("utf-8")
    except UnicodeDecodeError:
        raise media_rejected(field, Reason.TEXT_INVALID, "The document is not valid UTF-8") from None
    if _CONTROL.search(text):
        raise media_rejected(field, Reason.TEXT_INVALID, "The document contains control characters")
    if _MARKUP.search(text):
        raise media_rejected(field, Reason.ACTIVE_MARKUP, "The document contains active markup")
    if ext == "json":
        try:
            json.loads(text, parse_constant=_reject_constant)
        except (ValueError, RecursionError):
            raise media_rejected(field, Reason.TEXT_INVALID, "The document is not valid JSON") from None
    path = os.path.join(out_dir, f"out.{ext}")
    with open(path, "wb") as fh:
        fh.write(data)
    return TextResult(path, ext, _OUTPUT[ext], {})
