"""The SDK's tests that run a bot against a real botsvc (the plugin's
server, real HTTP) are server tests."""
from pathlib import Path

import pytest

HERE = Path(__file__).parent
IN_PROCESS = {"test_import.py", "test_generated.py", "test_bot_object.py"}


def pytest_collection_modifyitems(items):
    for item in items:
        path = Path(str(item.fspath))
        if path.parent == HERE and path.name not in IN_PROCESS:
            item.add_marker(pytest.mark.server)
