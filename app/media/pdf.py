"""PDF policy: only passive documents pass, and they are kept byte for byte.

The inspection itself runs in a child Python (``pdf_inspect.py``) under the
media runner's limits; this module turns its verdict into the API's errors.
"""
from __future__ import annotations

import json
import os
import sys

from app.errors import media_rejected

from .config import MediaConfig
from .runner import run_tool, tool_failed

_INSPECTOR = os.path.join(os.path.dirname(os.path.abspath(__file__)), "pdf_inspect.py")
_MESSAGES = {
    "pdf_encrypted": "Encrypted PDFs are not accepted",
    "pdf_active": "PDFs with scripts or actions are not accepted",
    "pdf_linked": "PDFs that link to other files or addresses are not accepted",
    "pdf_form": "PDFs with forms are not accepted",
    "pdf_embedded": "PDFs with embedded files are not accepted",
    "pdf_too_complex": "The PDF has too many objects",
    "pdf_damaged": "Damaged PDFs are not accepted",
    "corrupt_file": "The PDF cannot be parsed",
}


def check_pdf(config: MediaConfig, cwd: str, name: str, field: str) -> dict:
    """Metadata (page count) of a passive PDF, or the policy rejection."""
    # -I: no PYTHONPATH, no user site, no current directory on sys.path.
    result = run_tool(
        [sys.executable, "-I", _INSPECTOR, name],
        dependency="pikepdf", cwd=cwd, timeout=config.probe_timeout,
        memory_bytes=config.tool_memory_bytes,
    )
    if result.returncode != 0:
        raise tool_failed("pikepdf", result, "the PDF inspector failed")
    try:
        verdict = json.loads(result.stdout)
    except ValueError:
        raise tool_failed("pikepdf", result, "unreadable verdict") from None
    if verdict.get("ok") is True:
        return {"pages": int(verdict["pages"])}
    reason = verdict.get("reason")
    if reason not in _MESSAGES:
        raise tool_failed("pikepdf", result, "unknown verdict")
    # The detail names what was found; it is our own text, never the file's.
    detail = verdict.get("detail") or ""
    raise media_rejected(field, reason, f"{_MESSAGES[reason]}: {detail}" if detail else _MESSAGES[reason])
