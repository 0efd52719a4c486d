"""The sandbox is a door, never a copy: it reads chats, messages, files and
sessions through the domain's functions, so no SQL is written under
app/botsvc/sandbox/ (a rule written twice drifts)."""
from __future__ import annotations

import ast
import re
from pathlib import Path

import botsvc.sandbox

SQL = re.compile(r"^\s*(SELECT|INSERT|UPDATE|DELETE|REPLACE|WITH|CREATE|DROP|PRAGMA)\b")
SANDBOX = Path(botsvc.sandbox.__file__).parent


def sql_strings(path: Path) -> list[str]:
    tree = ast.parse(path.read_text(), str(path))
    return [node.value for node in ast.walk(tree)
            if isinstance(node, ast.Constant) and isinstance(node.value, str)
            and SQL.match(node.value)]


def test_no_sql_under_app_sandbox():
    found = {str(path.relative_to(SANDBOX)): sql_strings(path)
             for path in sorted(SANDBOX.rglob("*.py"))}
    assert {path: strings for path, strings in found.items() if strings} == {}
    assert found   # the check did read the package


def test_the_check_finds_sql(tmp_path):
    sample = tmp_path / "sample.py"
    sample.write_text('conn.execute("SELECT * FROM chats WHERE id = ?", (1,))\n'
                      'note = "Select a bot on the left"\n')
    assert sql_strings(sample) == ["SELECT * FROM chats WHERE id = ?"]
