"""PDF policy: only passive documents pass, and they are kept byte for byte.

The inspection itself runs in a child Python (``pdf_inspect.py``) under the
media runner's limits; this module turns its verdict into the API's errors.
"""
from __future__ import annotations

import json
import os
import sys

from botsvc.errors import media_rejected

from .config import MediaConfig
from .runner import run_tool, tool_failed

_INSPECTOR = os.path.join(os.path.dirname(os.path.abspath(__file__)), "pdf_inspect.py")
# What each verdict of the inspector says. Its finding, in our own words
# (never the file's), follows when it adds something: "Damaged PDFs are not
# accepted: it opens only after repair; ...".
_SUMMARIES = {
    "pdf_encrypted": "Encrypted PDFs are not accepted",
    "pdf_active": "PDFs with scripts or actions are not accepted",
    "pdf_linked": "PDFs that link to other files or addresses are not accepted",
    "pdf_form": "PDFs with forms are not accepted",
    "pdf_embedded": "PDFs with embedded files are not accepted",
    "pdf_too_complex": "PDFs this complex are not accepted",
    "pdf_damaged": "Damaged PDFs are not accepted",
    "corrupt_file": "Unreadable PDFs are not accepted",
}
REASONS = tuple(_SUMMARIES)


def description(reason: str, finding: str) -> str:
    summary = _SUMMARIES[reason]
    return f"{summary}: {finding}" if finding else summary


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
    if reason not in _SUMMARIES:
        raise tool_failed("pikepdf", result, "unknown verdict")
    raise media_rejected(field, reason, description(reason, verdict.get("detail") or ""))
