"""docs/any-language.md as a reader follows it: the page shows exactly the
files here (a Node bot, its transcript, its CI job), and its commands run as
written, from the bot's directory, with the botsvc command on PATH: green,
red (the bot changed), the CI job's own line with JUnit XML, and pytest with
``botsvc_bot_command`` and an exported module, no conftest.py."""
from __future__ import annotations

import os
import re
import shutil
import subprocess
import sys
import xml.etree.ElementTree as ET
from pathlib import Path

import pytest
import yaml

from botsvc.devkit.paths import REPO
from tests.support.welcome_chat import export_welcome_chat

HERE = Path(__file__).parent
PAGE = (REPO / "docs" / "any-language.md").read_text(encoding="utf-8")
SHOWN = re.compile(r"^\*\*`(tests/any_language/[^`]+)`\*\*\n\n```[a-z]*\n(.*?)^```$",
                   re.MULTILINE | re.DOTALL)


def blocks(language: str) -> list[str]:
    return re.findall(rf"^```{language}\n(.*?)^```$", PAGE, re.MULTILINE | re.DOTALL)


def test_the_page_shows_each_file_exactly():
    shown = dict(SHOWN.findall(PAGE))
    assert set(shown) == {"tests/any_language/bot.js", "tests/any_language/bot-tests.yml",
                          "tests/any_language/transcripts/welcome.json"}
    for path, body in shown.items():
        assert body == (REPO / path).read_text(encoding="utf-8"), path


def test_the_ci_job_installs_what_botsvc_runs_with_and_keeps_the_report():
    steps = yaml.safe_load((HERE / "bot-tests.yml").read_text())["jobs"]["transcripts"]["steps"]
    install, run = [step["run"] for step in steps if "run" in step]
    bootstrap = (REPO / "scripts" / "bootstrap").read_text()
    needed = set(re.search(r"^APT_PACKAGES=\((.*)\)$", bootstrap, re.MULTILINE).group(1).split())
    needed -= {"clamav-daemon", "openssl"}   # clamd is optional; the service runs no openssl
    apt = re.search(r"apt-get install -y --no-install-recommends ([a-z0-9 .-]+?) &&", install)
    assert apt and needed <= set(apt.group(1).split())
    assert "--junit-xml report.xml" in run
    assert steps[-1]["with"]["path"] == "report.xml" and steps[-1]["if"] == "always()"


@pytest.fixture
def bot_dir(tmp_path, monkeypatch) -> Path:
    """The bot's repository: bot.js and transcripts/, and botsvc on PATH as
    ``pip install`` puts it; a server started by the command itself."""
    shutil.copy(HERE / "bot.js", tmp_path / "bot.js")
    shutil.copytree(HERE / "transcripts", tmp_path / "transcripts")
    monkeypatch.setenv("PATH", f"{Path(sys.executable).parent}{os.pathsep}{os.environ['PATH']}")
    monkeypatch.delenv("BOTSVC_URL", raising=False)
    return tmp_path


def shell(line: str, cwd: Path) -> subprocess.CompletedProcess:
    return subprocess.run(["bash", "-c", line], cwd=cwd, capture_output=True, text=True,
                          timeout=180)


@pytest.mark.server
def test_the_pages_commands_pass_and_write_junit_xml(bot_dir):
    expected = blocks("text")[0]
    for line in blocks("sh")[0].splitlines():
        done = shell(line, bot_dir)
        assert (done.returncode, done.stdout) == (0, expected), done.stderr
    suite = ET.parse(bot_dir / "report.xml").getroot().find("testsuite")
    assert (suite.get("tests"), suite.get("failures")) == ("1", "0")


@pytest.mark.server
def test_the_ci_jobs_line_runs_as_written(bot_dir):
    steps = yaml.safe_load((HERE / "bot-tests.yml").read_text())["jobs"]["transcripts"]["steps"]
    done = shell([step["run"] for step in steps if "run" in step][1], bot_dir)
    assert done.returncode == 0, done.stdout + done.stderr
    case = ET.parse(bot_dir / "report.xml").getroot().find("testsuite/testcase")
    assert case.get("name") == "transcripts/welcome.json"
    assert case.find("system-out").text.startswith("polling http://127.0.0.1:")


@pytest.mark.server
def test_a_changed_bot_fails_as_the_page_shows(bot_dir):
    bot = bot_dir / "bot.js"
    bot.write_text(bot.read_text().replace("You said:", "You wrote:"))
    done = shell(blocks("sh")[0].splitlines()[0], bot_dir)
    assert done.returncode == 1
    shown = re.sub(r"127\.0\.0\.1:\d+", "127.0.0.1:PORT", done.stdout)
    assert shown == blocks("text")[1]


@pytest.fixture(scope="module")
def exported_for_node(tmp_path_factory) -> tuple[str, object]:
    """A chat with the Node bot, exported as a pytest module, and the server."""
    from botsvc.devkit.servers import running_server

    with running_server(tmp_path_factory.mktemp("node"), BOTSVC_TEST_TOOLS=1) as server:
        yield export_welcome_chat(server, ["node", str(HERE / "bot.js")],
                                  tmp_path_factory.mktemp("o") / "log"), server


@pytest.mark.server
def test_pytest_runs_the_exported_module_with_the_pages_ini(bot_dir, exported_for_node,
                                                            monkeypatch):
    content, server = exported_for_node
    (bot_dir / "test_welcome.py").write_text(content)
    (bot_dir / "pytest.ini").write_text(blocks("ini")[0])
    monkeypatch.setenv("BOTSVC_URL", server.base_url)
    monkeypatch.setenv("BOTSVC_ADMIN_TOKEN", server.admin_token)
    (line,) = blocks("sh")[1].splitlines()
    done = shell(line, bot_dir)
    assert done.returncode == 0, done.stdout + done.stderr
    assert "1 passed" in done.stdout and "bot_under_test: node bot.js" in done.stdout
    assert not (bot_dir / "conftest.py").exists()
