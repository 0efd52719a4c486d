"""The README's examples run as they are shown (tests/testing_tools checks
that the README shows exactly these files). They start a real botsvc
through the plugin, so they count as server tests here."""
from pathlib import Path

import pytest

HERE = Path(__file__).parent


def pytest_collection_modifyitems(items):
    for item in items:
        if HERE in Path(str(item.fspath)).parents:
            item.add_marker(pytest.mark.server)
