"""The README's "Testing your bot" shows exactly the files in tests/examples/,
which the suite runs: what a reader copies is what is tested."""
from __future__ import annotations

import re

import pytest
import yaml

from botsvc.devkit.paths import REPO

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


def ci_commands() -> dict[str, list[str]]:
    """The shell commands of each CI example (GitHub Actions, GitLab CI)."""
    actions = yaml.safe_load((EXAMPLES / "bot-tests.yml").read_text())
    gitlab = yaml.safe_load((EXAMPLES / "gitlab-ci.yml").read_text())
    return {"github": [step["run"] for step in actions["jobs"]["test"]["steps"] if "run" in step],
            "gitlab": gitlab["bot-tests"]["script"]}


def test_each_ci_recipe_is_two_lines_installing_what_botsvc_runs_with():
    """One line installs the Debian packages scripts/bootstrap installs for
    the service (not the test-only browser) and botsvc with pytest; the
    other runs the bot's tests, where the plugin starts botsvc."""
    bootstrap = (REPO / "scripts" / "bootstrap").read_text()
    needed = set(re.search(r"^APT_PACKAGES=\((.*)\)$", bootstrap, re.MULTILINE).group(1).split())
    needed -= {"clamav-daemon", "openssl"}   # clamd is optional; the service runs no openssl
    for name, (install, run) in ci_commands().items():
        apt = re.search(r"apt-get install -y --no-install-recommends ([a-z0-9 .-]+?) &&", install)
        assert apt and needed <= set(apt.group(1).split()), (name, needed)
        assert re.search(r'pip install "botsvc @ git\+https://\S+" pytest$', install), name
        assert run == "pytest tests/", name


def test_the_fixture_table_lists_every_helper_the_examples_use():
    """Each method the examples call on a fixture (``botsvc_user.say(...)``)
    is in that fixture's row of the README's table."""
    readme = (REPO / "README.md").read_text(encoding="utf-8")
    rows = dict(re.findall(r"^\| `(botsvc\w*)` \| (.*) \|$", readme, re.MULTILINE))
    used = {(fixture, helper) for path in EXAMPLES.glob("test_*.py")
            for fixture, helper in re.findall(r"\b(botsvc\w*)\.(\w+)\(", path.read_text())}
    assert used, "the examples call no fixture's helper"
    missing = {(fixture, helper) for fixture, helper in used
               if not re.search(rf"`{helper}\(", rows.get(fixture, ""))}
    assert not missing, missing


@pytest.mark.alone
@pytest.mark.server
def test_the_examples_pass_under_xdist_each_worker_with_its_own_server(pytester, monkeypatch):
    """``pytest -n 2``: each xdist worker is a pytest session of its own, so
    it starts its own server (its own temporary dir and free port) and each
    test still makes its own bot."""
    monkeypatch.delenv("BOTSVC_URL", raising=False)
    for path in EXAMPLES.glob("*.py"):
        (pytester.path / path.name).write_text(path.read_text())
    pytester.makeconftest(
        (EXAMPLES / "conftest.py").read_text() + '''

import os

@pytest.fixture(autouse=True)
def _which_server(request):
    if "botsvc_server" in request.fixturenames:
        server = request.getfixturevalue("botsvc_server")
        with open(f"servers-{os.environ['PYTEST_XDIST_WORKER']}", "a") as fh:
            fh.write(server.base_url + "\\n")
''')
    result = pytester.runpytest_subprocess("-n", "2", "-p", "no:cacheprovider")
    tests = sum(path.read_text().count("\ndef test_") for path in EXAMPLES.glob("test_*.py"))
    result.assert_outcomes(passed=tests)
    urls = {worker.name: set(worker.read_text().split())
            for worker in pytester.path.glob("servers-gw*")}
    assert set(urls) == {"servers-gw0", "servers-gw1"}   # both workers ran tests
    assert [len(seen) for seen in urls.values()] == [1, 1]
    assert urls["servers-gw0"] != urls["servers-gw1"]
