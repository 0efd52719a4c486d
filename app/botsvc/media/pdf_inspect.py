"""Standalone PDF inspector, run as ``python -I pdf_inspect.py in``.

It runs in its own process (through the media runner) so that a hostile PDF
meets qpdf's C++ parser under a time and memory limit, away from the web
worker. It must import nothing from ``app``. It prints one JSON verdict:
``{"ok": true, "pages": N}`` or ``{"ok": false, "reason": ..., "detail": ...}``.

Every object in the cross-reference table is visited, including those packed
in object streams; qpdf decodes names, so ``/J#61vaScript`` arrives as
``/JavaScript``. A byte search would miss both.

Only a PDF that opens cleanly passes. What one reader repairs another may read
differently, so a file qpdf can only open by reconstructing its
cross-reference table (a broken or looping xref chain, a wrong offset), or
that makes qpdf warn while its objects are read (a wrong stream length, a
missing ``endobj``, a page without a size), is ``pdf_damaged``; one it cannot
open even by repairing (a looping page tree) is ``corrupt_file``. The one
warning that passes is qpdf giving a page without ``/Resources`` an empty
set, which every reader does the same way. Work is bounded: qpdf detects xref and page-tree loops, the walk
visits each object once and at most MAX_NODES nodes, and the runner's time
limit stops anything else.
"""
from __future__ import annotations

import json
import sys

import pikepdf

MAX_NODES = 1_000_000

ACTIONS = {
    "/GoTo", "/GoToR", "/GoToE", "/GoToDp", "/Launch", "/Thread", "/URI", "/Sound", "/Movie",
    "/Hide", "/Named", "/SubmitForm", "/ResetForm", "/ImportData", "/JavaScript",
    "/SetOCGState", "/Rendition", "/Trans", "/GoTo3DView", "/RichMediaExecute",
}
# Navigation inside the document is passive; these are the only safe actions.
SAFE_ACTIONS = {"/GoTo", "/Trans"}
SAFE_NAMED = {"/NextPage", "/PrevPage", "/FirstPage", "/LastPage"}
LINK_ACTIONS = {"/URI", "/GoToR", "/GoToE", "/Thread"}
ACTIVE_SUBTYPES = {"/Sound", "/Movie", "/Screen", "/RichMedia", "/3D", "/PS"}


DAMAGED = "it opens only after repair; save it again with a PDF program"
# qpdf's page-tree warning for a page without resources, which it gives an
# empty set of them: every reader does the same. (A page without a MediaBox is
# damage: readers' default sizes differ.)
PAGE_DEFAULTS = ("Resources is missing or invalid; repairing",)


class Verdict(Exception):
    def __init__(self, reason: str, detail: str):
        super().__init__(detail)
        self.reason, self.detail = reason, detail


_DICT, _STREAM, _ARRAY = (pikepdf.ObjectType.dictionary, pikepdf.ObjectType.stream,
                          pikepdf.ObjectType.array)
_NAME, _STRING = pikepdf.ObjectType.name_, pikepdf.ObjectType.string
# Keys that can make a dictionary interesting; most objects have none of
# them and are passed over after one set intersection.
_WATCHED = frozenset({
    "/JS", "/JavaScript", "/AA", "/AcroForm", "/XFA", "/EmbeddedFiles", "/EF", "/RichMediaContent",
    "/Type", "/Subtype", "/S", "/FS", "/URI", "/OpenAction", "/Collection",
})


def _code(value):
    return value._type_code if isinstance(value, pikepdf.Object) else None


def _name(value) -> str | None:
    return str(value) if _code(value) == _NAME else None


def _check_action(d: dict, s: str | None) -> None:
    if s in SAFE_ACTIONS:
        return
    if s == "/Named" and _name(d.get("/N")) in SAFE_NAMED:
        return
    if s == "/Thread" and "/F" not in d:
        return  # an article thread in this document
    if s in LINK_ACTIONS:
        raise Verdict("pdf_linked", f"it has a {s[1:]} action")
    if s in ACTIONS:
        raise Verdict("pdf_active", f"it has a {s[1:]} action")
    raise Verdict("pdf_active", "it has an action of an unknown kind")  # never the file's own name


def check_dict(d: dict) -> None:
    """``d`` maps decoded key names to values, as ``Dictionary.items()`` gives."""
    keys = d.keys()
    if not keys & _WATCHED:
        return
    if keys & {"/JS", "/JavaScript"}:
        raise Verdict("pdf_active", "it contains JavaScript")
    if "/AA" in keys:
        raise Verdict("pdf_active", "it has actions that run by themselves (AA)")
    if keys & {"/AcroForm", "/XFA"}:
        raise Verdict("pdf_form", "it has an interactive form (AcroForm or XFA)")
    if keys & {"/EmbeddedFiles", "/EF", "/RichMediaContent", "/Collection"}:
        raise Verdict("pdf_embedded", "")
    type_, subtype, s = _name(d.get("/Type")), _name(d.get("/Subtype")), _name(d.get("/S"))
    if type_ == "/EmbeddedFile" or subtype == "/FileAttachment":
        raise Verdict("pdf_embedded", "")
    if subtype == "/Widget":
        raise Verdict("pdf_form", "it has fields to fill in")
    if subtype in ACTIVE_SUBTYPES:
        raise Verdict("pdf_active", f"it has {subtype[1:]} content")
    if type_ == "/Filespec" and _name(d.get("/FS")) == "/URL":
        raise Verdict("pdf_linked", "it refers to a remote file")
    if _code(d.get("/URI")) == _STRING:
        raise Verdict("pdf_linked", "it has a web address (URI)")
    if type_ == "/Action" or s in ACTIONS:
        _check_action(d, s)
    opener = d.get("/OpenAction")
    # An array is a destination (which page to show); a dictionary is an
    # action, checked where it is visited, and must at least name its type.
    if _code(opener) == _DICT and "/S" not in opener:
        raise Verdict("pdf_active", "it has an open action of no known kind")


def walk(pdf: pikepdf.Pdf) -> None:
    stack = [pdf.trailer, *pdf.objects]
    seen = 0
    while stack:
        obj = stack.pop()
        seen += 1
        if seen > MAX_NODES:
            raise Verdict("pdf_too_complex", f"it has over {MAX_NODES} objects")
        code = _code(obj)
        if code == _DICT or code == _STREAM:
            items = dict(obj.items())
            check_dict(items)
            children = items.values()
        elif code == _ARRAY:
            children = list(obj)
        else:
            continue
        for child in children:
            # Indirect objects are in pdf.objects already: visiting them only
            # there keeps reference cycles from looping.
            if _code(child) in (_DICT, _ARRAY) and not child.is_indirect:
                stack.append(child)


def _damage(pdf: pikepdf.Pdf) -> None:
    """Raise pdf_damaged if qpdf warned about anything but a page default."""
    if any(not warning.endswith(PAGE_DEFAULTS) for warning in pdf.get_warnings()):
        raise Verdict("pdf_damaged", DAMAGED)


def _open_failure(path: str) -> dict:
    """Why a PDF that does not open as it is fails: repairable or not."""
    try:
        with pikepdf.open(path, attempt_recovery=True):
            return {"ok": False, "reason": "pdf_damaged", "detail": DAMAGED}
    except pikepdf.PasswordError:
        return {"ok": False, "reason": "pdf_encrypted", "detail": ""}
    except Exception:
        return {"ok": False, "reason": "corrupt_file", "detail": "it cannot be parsed"}


def inspect(path: str) -> dict:
    try:
        pdf = pikepdf.open(path, attempt_recovery=False)
    except pikepdf.PasswordError:
        return {"ok": False, "reason": "pdf_encrypted", "detail": ""}
    except Exception:
        return _open_failure(path)
    with pdf:
        try:
            if pdf.is_encrypted:
                raise Verdict("pdf_encrypted", "")
            _damage(pdf)
            walk(pdf)
            pages = len(pdf.pages)
            _damage(pdf)
        except Verdict as verdict:
            return {"ok": False, "reason": verdict.reason, "detail": verdict.detail}
        except Exception:
            # The file opened, but reading its objects or pages failed (a
            # looping page tree): damaged, not merely unparseable.
            return {"ok": False, "reason": "pdf_damaged", "detail": DAMAGED}
    if pages < 1:
        return {"ok": False, "reason": "corrupt_file", "detail": "it has no pages"}
    return {"ok": True, "pages": pages}


if __name__ == "__main__":
    sys.stdout.write(json.dumps(inspect(sys.argv[1])))
