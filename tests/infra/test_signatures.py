"""Keyword-only where two neighbours could be swapped: a function of the
domain takes at most one optional parameter by position. send_text took
(reply_to_message_id, reply_markup) and send_card (reply_markup,
reply_to_message_id): a call that passed them in the other's order would
have sent the wrong thing, without an error."""
from __future__ import annotations

import ast

from botsvc.devkit.paths import REPO

DOMAIN = REPO / "app" / "botsvc" / "domain"

ALLOWED: set[str] = set()


def test_domain_functions_take_their_options_by_keyword():
    swappable = []
    for path in sorted(DOMAIN.glob("*.py")):
        for node in ast.walk(ast.parse(path.read_text(encoding="utf-8"))):
            if isinstance(node, (ast.FunctionDef, ast.AsyncFunctionDef)):
                positional = node.args.posonlyargs + node.args.args
                optional = positional[len(positional) - len(node.args.defaults):]
                name = f"{path.name}:{node.name}"
                if len(node.args.defaults) > 1 and name not in ALLOWED:
                    swappable.append(f"{name}({', '.join(a.arg for a in optional)})")
    assert swappable == [], "make these keyword-only (a * before them): " + "; ".join(swappable)
