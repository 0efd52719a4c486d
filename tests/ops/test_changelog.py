"""docs/changelog.md's examples hold: each import it shows runs, and each
dotted name it gives as the new one (``botsvc.catalogue.entry``,
``botsvc.factory:worker_app``) exists. An upgrade note naming something
that does not exist sends a user hunting."""
from __future__ import annotations

import importlib
import re

from botsvc.devkit.paths import REPO

CHANGELOG = (REPO / "docs" / "changelog.md").read_text(encoding="utf-8")


def test_each_import_shown_runs():
    imports = re.findall(r"`(from botsvc\.[\w.]+ import [\w, ]+)`", CHANGELOG)
    assert imports, "the changelog shows no import"
    for line in imports:
        exec(line, {})   # noqa: S102 - the changelog's own text, from the repository


def test_each_new_dotted_name_exists():
    # Logger names read like modules but are not all modules: their note is
    # checked by the logging tests, not here.
    notes = [note for note in re.split(r"\n(?=- )", CHANGELOG)
             if not note.startswith("- **Logger names")]
    text = "\n".join(notes)
    modules = set(re.findall(r"`(botsvc(?:\.\w+)+)`", text))
    # "`botsvc.catalogue.entry`, `.body`": the short ones continue the first.
    for first, rest in re.findall(r"`(botsvc(?:\.\w+)+)\.\w+`((?:,?\s+(?:and\s+)?`\.\w+`)+)", text):
        modules |= {f"{first}.{tail}" for tail in re.findall(r"`\.(\w+)`", rest)}
    assert {"botsvc.catalogue.entry", "botsvc.catalogue.validation",
            "botsvc.connection.wire"} <= modules
    for name in sorted(modules):
        importlib.import_module(name)
    for module, attribute in re.findall(r"\b(botsvc(?:\.\w+)+):(\w+)\(\)", text):
        assert hasattr(importlib.import_module(module), attribute), (module, attribute)
