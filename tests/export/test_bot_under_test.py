"""The plugin's own ``bot_under_test``: an exported test asks for it, and
until the developer's conftest.py defines it, it fails saying what to define
(no server is started for that)."""
from __future__ import annotations

import subprocess
import sys


def test_the_default_fixture_says_what_to_define(tmp_path):
    (tmp_path / "test_exported.py").write_text(
        "def test_conversation(bot_under_test, botsvc_bot):\n    pass\n")
    run = subprocess.run([sys.executable, "-m", "pytest", "-q", "-p", "no:cacheprovider",
                          str(tmp_path)], cwd=tmp_path, capture_output=True, text=True,
                         timeout=120)
    assert run.returncode == 1, run.stdout + run.stderr
    assert "1 error" in run.stdout, run.stdout
    assert ("bot_under_test: set botsvc_bot_command (your bot as a process, e.g."
            " 'botsvc_bot_command = node bot.js' in pytest.ini) or botsvc_bot_object") in run.stdout
    assert ("or define a fixture named bot_under_test in your conftest.py: it starts your bot"
            " with botsvc_bot.base_url and botsvc_bot.token") in run.stdout, run.stdout
