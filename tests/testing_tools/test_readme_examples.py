"""The README's "Testing your bot" shows exactly the files in tests/examples/,
which the suite runs: what a reader copies is what is tested."""
from __future__ import annotations

import re

from tests.support.paths import REPO

EXAMPLES = REPO / "tests" / "examples"
SHOWN = re.compile(r"^\*\*`(tests/examples/[^`]+)`\*\*\n\n```[a-z]*\n(.*?)^```$",
                   re.MULTILINE | re.DOTALL)


def test_the_readme_shows_each_example_file_exactly():
    readme = (REPO / "README.md").read_text(encoding="utf-8")
    shown = {path: body for path, body in SHOWN.findall(readme)}
    expected = {f"tests/examples/{path.name}" for path in EXAMPLES.iterdir()
                if path.suffix in (".py", ".yml") and path.name != "conftest.py"}
    assert set(shown) == expected
    for path, body in shown.items():
        assert body == (REPO / path).read_text(encoding="utf-8"), path
