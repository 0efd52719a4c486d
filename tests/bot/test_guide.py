"""docs/bot-sdk.md's files run as they are shown: its first bot as a
process of its own (``run_polling``, stopped by SIGTERM), and its tests by
an inner pytest on the plugin, where the ini key ``botsvc_bot_object``
gives ``bot_under_test`` with no conftest.py."""
from __future__ import annotations

import os
import re
import signal
import subprocess
import sys
from pathlib import Path

import pytest

from botsvc.devkit.paths import REPO

GUIDE = REPO / "docs" / "bot-sdk.md"
SHOWN = re.compile(r"^\*\*`([^`]+)`\*\*\n\n```[a-z]*\n(.*?)^```$", re.MULTILINE | re.DOTALL)


@pytest.fixture
def project(tmp_path) -> Path:
    """The guide's files in a folder, as a reader would copy them."""
    shown = dict(SHOWN.findall(GUIDE.read_text(encoding="utf-8")))
    assert set(shown) == {"first_bot.py", "pytest.ini", "test_first_bot.py"}
    for name, body in shown.items():
        (tmp_path / name).write_text(body)
    return tmp_path


def test_the_first_bot_runs_as_a_process(project, botsvc_bot, botsvc_user):
    env = {**os.environ, "BOTSVC_BASE_URL": botsvc_bot.base_url,
           "BOTSVC_BOT_TOKEN": botsvc_bot.token}
    bot = subprocess.Popen([sys.executable, "first_bot.py"], cwd=project, env=env)
    try:
        botsvc_user.start("ad_1")
        assert botsvc_user.wait_for_message()["text"] == "Welcome! You came from ad_1."
        botsvc_user.say("hello")
        assert botsvc_user.wait_for_message()["text"] == "hello"
        bot.send_signal(signal.SIGTERM)
        assert bot.wait(timeout=30) == 0
    finally:
        bot.kill()


def test_its_tests_run_with_the_ini_key_and_no_conftest(project, botsvc_server):
    env = {k: v for k, v in os.environ.items() if k != "PYTEST_ADDOPTS"}
    env.update(BOTSVC_URL=botsvc_server.base_url, BOTSVC_ADMIN_TOKEN=botsvc_server.admin_token)
    done = subprocess.run([sys.executable, "-m", "pytest", "-q", "-p", "no:cacheprovider",
                           "-p", "no:randomly"], cwd=project, env=env, capture_output=True,
                          text=True, timeout=300)
    assert done.returncode == 0, done.stdout + done.stderr
    assert "2 passed" in done.stdout
