"""botsvc as a user installs it: ``python -m build`` makes an sdist and a
wheel (the wheel built from the sdist), the wheel holds everything the
service reads at run time, and in a fresh virtual environment outside the
checkout ``pip install botsvc-*.whl`` then ``botsvc serve`` serves, and the
README's examples (tests/examples/) pass with the pytest plugin of the
installed package.

The slowest test of the suite (a build, an install, two servers). It stays
bounded: the build uses this environment's setuptools (--no-isolation), the
new environment gets no pip of its own (this one's pip installs into it),
and its dependencies are pinned to the versions installed here, which pip's
cache already holds.
"""
from __future__ import annotations

import os
import re
import shutil
import subprocess
import sys
import tarfile
import zipfile
from pathlib import Path

import pytest
import requests

from botsvc.media import needs_offline_database
from botsvc.testkit.server import LocalServer
from devkit.paths import REPO

pytestmark = pytest.mark.server

EXAMPLES = REPO / "tests" / "examples"
MIGRATIONS = sorted(path.name for path in (REPO / "migrations").glob("*.sql"))


def run(argv: list, timeout: float, **kwargs) -> subprocess.CompletedProcess:
    done = subprocess.run([str(arg) for arg in argv], capture_output=True, text=True,
                          timeout=timeout, **kwargs)
    assert done.returncode == 0, f"{argv}\n{done.stdout[-3000:]}\n{done.stderr[-3000:]}"
    return done


def outside_env(**extra: str) -> dict[str, str]:
    """This environment without anything that points into the checkout or
    configures a botsvc: what a user's shell would have."""
    env = {name: value for name, value in os.environ.items()
           if not name.startswith(("BOTSVC_", "PYTEST_", "PYTHON")) and name != "VIRTUAL_ENV"}
    env["PATH"] = os.pathsep.join(entry for entry in env.get("PATH", "").split(os.pathsep)
                                  if entry and not Path(entry).is_relative_to(REPO))
    return {**env, **extra}


@pytest.fixture(scope="module")
def dist(tmp_path_factory) -> Path:
    out = tmp_path_factory.mktemp("dist")
    run([sys.executable, "-m", "build", "--no-isolation", "--outdir", out, REPO], 600)
    return out


@pytest.fixture(scope="module")
def wheel(dist) -> Path:
    (found,) = dist.glob("botsvc-*.whl")
    return found


@pytest.fixture(scope="module")
def venv(tmp_path_factory, wheel) -> Path:
    """A fresh environment with the wheel and pytest installed, nothing else."""
    home = tmp_path_factory.mktemp("fresh")
    run([sys.executable, "-m", "venv", "--without-pip", home / "venv"], 120)
    pinned = home / "constraints.txt"
    pinned.write_text(run([sys.executable, "-m", "pip", "freeze", "--exclude-editable"],
                          120).stdout)
    run([sys.executable, "-m", "pip", "--python", home / "venv" / "bin" / "python", "install",
         "--quiet", "--disable-pip-version-check", "--constraint", pinned, wheel, "pytest"],
        900, env=outside_env(), cwd=home)
    return home / "venv"


def test_the_wheel_holds_what_the_service_reads(wheel):
    names = set(zipfile.ZipFile(wheel).namelist())
    assert {f"botsvc/sql_migrations/{name}" for name in MIGRATIONS} <= names
    # The folder app/ is installed as botsvc/, and nothing is installed as app/.
    packaged_data = ["botsvc/" + path.relative_to(REPO / "app").as_posix() for folder in (
        "app/openapi/static", "app/sandbox/static", "app/sandbox/templates")
        for path in (REPO / folder).rglob("*") if path.is_file()]
    assert packaged_data and set(packaged_data) <= names
    assert {"botsvc/gunicorn_conf.py", "botsvc/media/signatures.py",
            "botsvc/media/pdf_inspect.py", "botsvc/testkit/plugin.py", "botsvc/cli.py"} <= names
    assert not any(name.split("/")[0] == "app" for name in names)
    (entry_points,) = [name for name in names if name.endswith(".dist-info/entry_points.txt")]
    text = zipfile.ZipFile(wheel).read(entry_points).decode()
    assert "botsvc = botsvc.cli:main" in text and "botsvc = botsvc.testkit.plugin" in text
    assert not any(name.startswith(("tests/", "scripts/", "devkit/", "migrations/"))
                   for name in names)


def test_the_sdist_holds_the_migrations_and_the_build_rule(dist):
    (sdist,) = dist.glob("botsvc-*.tar.gz")
    names = {name.split("/", 1)[1] for name in tarfile.open(sdist).getnames() if "/" in name}
    assert {f"migrations/{name}" for name in MIGRATIONS} <= names
    assert {"setup.py", "setup.cfg", "pyproject.toml", "README.md"} <= names


def test_the_installed_package_is_the_one_imported(venv, tmp_path):
    code = "import botsvc, botsvc.migrations as m; print(botsvc.__file__); print(m.MIGRATIONS_DIR)"
    imported, migrations = run([venv / "bin" / "python", "-c", code], 60, cwd=tmp_path,
                               env=outside_env()).stdout.splitlines()
    assert Path(imported).is_relative_to(venv) and Path(migrations).is_relative_to(venv)
    assert sorted(os.listdir(migrations)) == MIGRATIONS


def test_botsvc_serve_from_the_wheel(venv, tmp_path):
    server = LocalServer(tmp_path / "data", outside_env(),
                         argv=[str(venv / "bin" / "botsvc"), "serve"])
    server.start()
    try:
        created = server.operator("createBot", username="wheel_bot")
        assert created["bot"]["username"] == "wheel_bot"
        ready = requests.get(f"{server.base_url}/readyz", timeout=30)
        assert ready.json() == {"ok": True, "result": {"status": "ready", "checks": {
            "database": "ok", "media": "ok", "disk": "ok"}}}
        document = requests.get(f"{server.base_url}/openapi.json", timeout=30).json()
        assert document["info"]["version"] == "2.0.0"
        page = requests.get(f"{server.base_url}/docs", timeout=30)
        assert page.status_code == 200 and "swagger-ui-bundle.js" in page.text
        asset = requests.get(f"{server.base_url}/docs/swagger-ui-bundle.js", timeout=30)
        assert asset.status_code == 200
        assert asset.content == (REPO / "app/openapi/static/swagger-ui-bundle.js").read_bytes()
        signin = requests.get(f"{server.base_url}/sandbox/", timeout=30)
        assert signin.status_code == 200 and "<form" in signin.text
    finally:
        server.stop()
    log = server.log_path.read_text()
    assert f"botsvc: serving on http://127.0.0.1:{server.port}" in log
    if needs_offline_database(None, None):
        assert "WARNING: NO REAL VIRUS SIGNATURES." in log
    schema = run([venv / "bin" / "botsvc", "migrate"], 60, cwd=tmp_path,
                 env=outside_env(BOTSVC_DATA_DIR=str(server.data_dir))).stdout
    # The newest file's number (numbers are given out per piece of work, so
    # one may be missing while another lands; the count would not say it).
    assert schema.startswith(f"schema version {int(MIGRATIONS[-1][:4])} at ")


def test_the_readme_examples_pass_against_the_installed_package(venv, tmp_path):
    """What the README's CI recipe does in a bot's repository: its tests,
    with the plugin starting botsvc from the installed package."""
    project = tmp_path / "your-bot"
    (project / "tests").mkdir(parents=True)
    for path in EXAMPLES.glob("*.py"):
        if path.name != "conftest.py":   # the suite's own marker, not the user's
            shutil.copy(path, project / "tests" / path.name)
    expected = sum(len(re.findall(r"^def test_", path.read_text(), re.MULTILINE))
                   for path in (project / "tests").glob("test_*.py"))
    done = subprocess.run([str(venv / "bin" / "python"), "-m", "pytest", "-q", "-p",
                           "no:cacheprovider", "tests/"], cwd=project, env=outside_env(),
                          capture_output=True, text=True, timeout=600)
    assert done.returncode == 0, done.stdout[-5000:] + done.stderr[-3000:]
    assert re.search(rf"^{expected} passed\b", done.stdout, re.MULTILINE), done.stdout[-2000:]
