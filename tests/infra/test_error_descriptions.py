"""Every description the service gives a refusal says each thing once: read
from the code that builds them (app/botsvc/errors.py's reason table, the media
modules, the webhook URL checks, the PDF inspector's findings), not from a
copy of them."""
from __future__ import annotations

import ast
import re

from botsvc.devkit.paths import REPO
from botsvc.errors import Reason
from botsvc.media import pdf

APP = REPO / "app" / "botsvc"
PDF_INSPECTOR = APP / "media" / "pdf_inspect.py"
# Functions that make a refusal: where their reason and description are.
MAKERS = {"media_rejected": (1, 2), "_reject": (0, 1), "invalid": ("reason", 1),
          "ApiError": (None, 1), "dependency_unavailable": (None, 1), "tool_failed": (None, 2)}
_STOP = set("the a an is are be been it its of to or and not in on with this that as at by for "
            "from has have no must than more only again its into per".split())
# A value filled in at run time: a word of its own, unlike any other.
_placeholders = iter(range(1, 1_000_000))


def _stem(word: str) -> str:
    for suffix in ("ing", "ed", "es", "s"):
        if word.endswith(suffix) and len(word) - len(suffix) >= 3:
            return word[:-len(suffix)]
    return word


def _words(clause: str) -> set[str]:
    return {_stem(w) for w in re.findall(r"[a-z0-9]+", clause.lower()) if w not in _STOP}


def doubled(description: str) -> bool:
    """Whether a clause says again what an earlier one said: two thirds of its
    words (less the little ones) are the earlier clause's."""
    unquoted = re.sub(r"'[^']*'", "", description)   # examples of what to send
    clauses = [_words(c) for c in re.split(r"[:;()]| - ", unquoted)]
    clauses = [c for c in clauses if c]
    return any(len(later & earlier) * 3 >= len(later) * 2
               for i, later in enumerate(clauses) for earlier in clauses[:i])


def _constants(tree: ast.Module) -> dict[str, str]:
    return {target.id: node.value.value for node in tree.body if isinstance(node, ast.Assign)
            for target in node.targets if isinstance(target, ast.Name)
            and isinstance(node.value, ast.Constant) and isinstance(node.value.value, str)}


def _text(node: ast.AST | None, constants: dict[str, str]) -> str | None:
    if isinstance(node, ast.Constant) and isinstance(node.value, str):
        return node.value
    if isinstance(node, ast.Name):
        return constants.get(node.id)
    if isinstance(node, ast.JoinedStr):
        parts = [_text(value, constants) if isinstance(value, ast.Constant)
                 else f"value{next(_placeholders)}" for value in node.values]
        return "".join(parts)
    return None


def _reason(node: ast.AST | None) -> str | None:
    if isinstance(node, ast.Attribute) and isinstance(node.value, ast.Name) \
            and node.value.id == "Reason":
        return Reason[node.attr].value
    if isinstance(node, ast.Constant) and isinstance(node.value, str):
        return node.value
    return None


def _argument(call: ast.Call, where):
    if isinstance(where, str):
        return next((k.value for k in call.keywords if k.arg == where), None)
    return call.args[where] if where is not None and len(call.args) > where else None


def refusals() -> list[tuple[str, str | None, str | None]]:
    """(place, reason, description) of every refusal made in app/: a
    description None when it is not a text in the code (built at run time)."""
    found = []
    for path in sorted(APP.rglob("*.py")):
        tree = ast.parse(path.read_text())
        constants = _constants(tree)
        for node in ast.walk(tree):
            if not isinstance(node, ast.Call):
                continue
            name = getattr(node.func, "id", None) or getattr(node.func, "attr", None)
            if name not in MAKERS or (name == "_reject" and "webhooks" not in path.parts):
                continue
            reason_at, text_at = MAKERS[name]
            place = f"{path.relative_to(APP.parent)}:{node.lineno}"
            found.append((place, _reason(_argument(node, reason_at)),
                          _text(_argument(node, text_at), constants)))
    return found


def pdf_findings() -> list[tuple[str, str]]:
    """(reason, detail) of every verdict the PDF inspector can give."""
    tree = ast.parse(PDF_INSPECTOR.read_text())
    constants = _constants(tree)
    found = []
    for node in ast.walk(tree):
        if isinstance(node, ast.Call) and getattr(node.func, "id", None) == "Verdict":
            found.append((_reason(node.args[0]), _text(node.args[1], constants)))
        if isinstance(node, ast.Dict):
            fields = {k.value: v for k, v in zip(node.keys, node.values, strict=True)
                      if isinstance(k, ast.Constant)}
            if _reason(fields.get("reason")) is not None:   # not the pass-through of a Verdict
                found.append((_reason(fields["reason"]), _text(fields.get("detail"), constants)))
    return found


def test_the_checker_sees_a_doubled_phrase():
    assert doubled("The PDF cannot be parsed: the PDF cannot be parsed")
    assert doubled("Encrypted PDFs are not accepted: the PDF is encrypted")
    assert not doubled("PDFs with scripts or actions are not accepted: it contains JavaScript")
    assert not doubled("Damaged PDFs are not accepted: it opens only after repair")


def test_every_pdf_finding_is_described_once():
    findings = pdf_findings()
    assert {reason for reason, _ in findings} == set(pdf.REASONS)
    for reason, detail in findings:
        assert detail is not None, reason
        text = pdf.description(reason, detail)
        assert not doubled(text), text


def test_every_description_in_the_code_says_each_thing_once():
    made = refusals()
    assert len(made) > 50   # the checker found the code's refusals
    offenders = [(place, text) for place, _, text in made if text and doubled(text)]
    assert offenders == []


def test_the_reason_table_is_all_used_and_each_reason_described():
    """Every reason word of app/botsvc/errors.py is given somewhere with a written
    description (the PDF's are composed from the inspector's findings)."""
    described = {reason for _, reason, text in refusals() if reason and text}
    described |= {reason for reason, _ in pdf_findings()}
    assert {reason.value for reason in Reason} - described == set()
