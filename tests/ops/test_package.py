"""botsvc as a user installs it: ``python -m build`` makes an sdist and a
wheel (the wheel built from the sdist), the wheel holds everything the
service reads at run time and nothing named ``app``, and in a fresh virtual
environment outside the checkout ``pip install botsvc-*.whl`` then ``botsvc
serve`` serves. A bot project laid out as most are (its own package ``app/``,
its ``tests/`` importing ``from app.bot import ...``) holding the README's
examples runs its suite with the plugin of the installed package: on this
Python, and on the newer ones a bot project may use (3.12, 3.13, from pyenv);
installed with pip itself, its package ``app`` stays its own, and
uninstalling it leaves botsvc whole.

The slowest tests of the suite (a build, three installs, servers). They stay
bounded: the build happens once, the new environments get no pip of their own (this one's pip
installs into them), and their dependencies are pinned to the versions
installed here, which pip's cache already holds.
"""
from __future__ import annotations

import os
import re
import shlex
import shutil
import subprocess
import sys
import tarfile
import zipfile
from pathlib import Path

import pytest
import requests

from botsvc.devkit.paths import REPO
from botsvc.media import needs_offline_database
from botsvc.testkit.server import LocalServer

pytestmark = pytest.mark.server

EXAMPLES = REPO / "tests" / "examples"
# The Pythons besides this one that a bot project may run: pyenv's, on every
# machine of this kind (CI's too).
PYENV = Path(os.environ.get("PYENV_ROOT", Path.home() / ".pyenv")) / "versions"
NEWER_PYTHONS = ("3.12", "3.13")
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


def readme_build_lines() -> tuple[list[str], str]:
    """The README's build command and the wheel it says the install takes."""
    readme = (REPO / "README.md").read_text(encoding="utf-8")
    [build] = re.findall(r"^(\.venv/bin/python -m build)\b", readme, re.MULTILINE)
    [wheel] = re.findall(r"^pip install dist/(botsvc-\S+\.whl) pytest\b", readme, re.MULTILINE)
    return shlex.split(build), wheel


@pytest.fixture(scope="module")
def dist(tmp_path_factory) -> Path:
    """Built as the README writes it, in the checkout (an isolated build:
    pip fetches setuptools into a temporary environment, from its cache),
    into a directory of the test's instead of dist/."""
    out = tmp_path_factory.mktemp("dist")
    build, _ = readme_build_lines()
    run([*build, "--outdir", out], 600, cwd=REPO)
    return out


@pytest.fixture(scope="module")
def wheel(dist) -> Path:
    (found,) = dist.glob("botsvc-*.whl")
    return found


def fresh_venv(home: Path, python: str | Path, wheel: Path, *pip_options: str) -> Path:
    """A new environment of ``python`` under ``home`` with the wheel and pytest
    installed, nothing else."""
    run([python, "-m", "venv", "--without-pip", home / "venv"], 120)
    pinned = home / "constraints.txt"
    pinned.write_text(run([sys.executable, "-m", "pip", "freeze", "--exclude-editable"],
                          120).stdout)
    run([sys.executable, "-m", "pip", "--python", home / "venv" / "bin" / "python", "install",
         "--quiet", "--disable-pip-version-check", "--constraint", pinned, *pip_options,
         wheel, "pytest"], 900, env=outside_env(), cwd=home)
    return home / "venv"


@pytest.fixture(scope="module")
def venv(tmp_path_factory, wheel) -> Path:
    return fresh_venv(tmp_path_factory.mktemp("fresh"), sys.executable, wheel)


def pyenv_python(version: str) -> Path:
    """pyenv's newest ``version`` (3.12 -> 3.12.1, say)."""
    found = sorted(PYENV.glob(f"{version}.*/bin/python{version}"),
                   key=lambda path: [int(part) for part in path.parts[-3].split(".")
                                     if part.isdigit()])
    assert found, f"no Python {version} under {PYENV} (pyenv install {version})"
    return found[-1]


# The bot project of the issue that renamed the package: its own package is
# ``app`` (botsvc's code folder has that name too, but installs as botsvc).
BOT_PROJECT = {
    "pyproject.toml": """\
[build-system]
requires = ["setuptools>=68"]
build-backend = "setuptools.build_meta"

[project]
name = "your-bot"
version = "1.0"

[tool.setuptools]
packages = ["app"]

[tool.pytest.ini_options]
pythonpath = ["."]   # the project's root, where its package app/ is
""",
    "app/__init__.py": '"""The bot project\'s own package."""\n',
    "app/bot.py": '''\
"""Greets every user who presses Start: one pass over the bot's updates."""
import requests

GREETING = "Hello from the bot project's own app package"


def greet_new_users(base_url: str, token: str) -> int:
    session = requests.Session()
    session.headers["Authorization"] = f"Bearer {token}"
    updates = session.post(f"{base_url}/v2/getUpdates", json={}, timeout=30).json()["result"]
    greeted = 0
    for update in updates:
        membership = update.get("membership")
        if membership and membership["status"] == "active":
            session.post(f"{base_url}/v2/sendMessage", timeout=30,
                         json={"chat_id": membership["chat_id"], "text": GREETING})
            greeted += 1
    return greeted
''',
    "tests/test_own_app.py": '''\
from pathlib import Path

import app
import botsvc
from app.bot import GREETING, greet_new_users


def test_app_is_the_projects_and_botsvc_the_installed_one():
    project = Path(__file__).resolve().parents[1]
    assert Path(app.__file__).resolve() == project / "app" / "__init__.py"
    assert "site-packages" in Path(botsvc.__file__).parts


def test_the_bot_greets_a_user_who_starts_it(botsvc_bot, botsvc_user):
    botsvc_user.start()
    assert greet_new_users(botsvc_bot.base_url, botsvc_bot.token) == 1
    assert botsvc_user.wait_for_message()["text"] == GREETING
''',
}


def bot_project(root: Path) -> tuple[Path, int]:
    """The bot project: its package app/, its tests beside the README's
    examples (as the README's CI recipe has them in a bot's repository);
    and how many tests it holds."""
    project = root / "your-bot"
    for name, text in BOT_PROJECT.items():
        (project / name).parent.mkdir(parents=True, exist_ok=True)
        (project / name).write_text(text)
    for path in EXAMPLES.glob("*.py"):
        if path.name != "conftest.py":   # the suite's own marker, not the user's
            shutil.copy(path, project / "tests" / path.name)
    expected = sum(len(re.findall(r"^def test_", path.read_text(), re.MULTILINE))
                   for path in (project / "tests").glob("test_*.py"))
    return project, expected


def assert_bot_suite_passes(venv: Path, root: Path) -> None:
    """``pytest`` in the bot project, as its CI runs it: the plugin starts
    botsvc from the installed package."""
    project, expected = bot_project(root)
    done = subprocess.run([str(venv / "bin" / "pytest"), "-q", "-p", "no:cacheprovider"],
                          cwd=project, env=outside_env(), capture_output=True, text=True,
                          timeout=600)
    assert done.returncode == 0, done.stdout[-5000:] + done.stderr[-3000:]
    assert re.search(rf"^{expected} passed\b", done.stdout, re.MULTILINE), done.stdout[-2000:]


def test_the_wheel_holds_what_the_service_reads(wheel):
    assert wheel.name == readme_build_lines()[1]   # the name the README installs
    names = set(zipfile.ZipFile(wheel).namelist())
    assert {f"botsvc/sql_migrations/{name}" for name in MIGRATIONS} <= names
    # The package folder app/botsvc/ installs as botsvc/, and nothing is installed as app/.
    packaged_data = ["botsvc/" + path.relative_to(REPO / "app" / "botsvc").as_posix() for folder in (
        "app/botsvc/openapi/static", "app/botsvc/sandbox/static", "app/botsvc/sandbox/templates")
        for path in (REPO / folder).rglob("*") if path.is_file()]
    assert packaged_data and set(packaged_data) <= names
    assert {"botsvc/gunicorn_conf.py", "botsvc/media/signatures.py",
            "botsvc/media/pdf_inspect.py", "botsvc/testkit/plugin.py", "botsvc/cli/__init__.py",
            "botsvc/bot/__init__.py", "botsvc/bot/methods.py"} <= names   # the bot SDK, generated
    assert not any(name.split("/")[0] == "app" for name in names)
    (entry_points,) = [name for name in names if name.endswith(".dist-info/entry_points.txt")]
    text = zipfile.ZipFile(wheel).read(entry_points).decode()
    assert "botsvc = botsvc.cli:main" in text and "botsvc = botsvc.testkit.plugin" in text
    assert not any(name.startswith(("tests/", "scripts/", "devkit/", "migrations/")) for name in names)
    # Any current Python: no upper bound that would shut out 3.12 or 3.13.
    (metadata,) = [name for name in names if name.endswith(".dist-info/METADATA")]
    metadata_text = zipfile.ZipFile(wheel).read(metadata).decode()
    assert "Requires-Python: >=3.11\n" in metadata_text
    assert "Provides-Extra: bot-async\n" in metadata_text


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
        assert asset.content == (REPO / "app/botsvc/openapi/static/swagger-ui-bundle.js").read_bytes()
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


def test_a_bot_project_with_its_own_app_package_passes_with_the_plugin(venv, tmp_path):
    """The README's examples and a project's own ``from app.bot import ...``,
    against the installed package: the plugin loads, the names do not meet."""
    assert_bot_suite_passes(venv, tmp_path)


def test_a_bot_package_named_app_installs_and_uninstalls_beside_botsvc(venv, tmp_path):
    """A bot project that is itself pip-installable, its package ``app``: it
    installs as its own folder (no merging into botsvc's), and uninstalling it
    leaves botsvc whole."""
    project, _ = bot_project(tmp_path)
    pip = [sys.executable, "-m", "pip", "--python", venv / "bin" / "python",
           "--disable-pip-version-check"]
    python = venv / "bin" / "python"
    where = "import app, botsvc; print(app.__file__); print(botsvc.__file__)"
    run([*pip, "install", "--quiet", project], 300, env=outside_env(), cwd=tmp_path)
    try:
        app_file, botsvc_file = run([python, "-c", where], 60, cwd=tmp_path,
                                    env=outside_env()).stdout.splitlines()
        site = Path(botsvc_file).parents[1]
        assert (Path(app_file), Path(botsvc_file)) == (site / "app" / "__init__.py",
                                                       site / "botsvc" / "__init__.py")
    finally:
        run([*pip, "uninstall", "--yes", "--quiet", "your-bot"], 120, env=outside_env())
    whole = "import botsvc.cli, botsvc.testkit.plugin, botsvc.factory; print(botsvc.__file__)"
    assert run([python, "-c", whole], 60, cwd=tmp_path, env=outside_env()).stdout.strip() \
        == botsvc_file
    assert not (site / "app").exists()


@pytest.mark.parametrize("version", NEWER_PYTHONS)
def test_the_wheel_installs_and_the_plugin_passes_on_a_newer_python(version, wheel, tmp_path):
    """Only wheels (--only-binary): every pinned dependency has one for this
    Python, so a bot project's CI builds nothing."""
    python = pyenv_python(version)
    venv = fresh_venv(tmp_path, python, wheel, "--only-binary", ":all:")
    assert run([venv / "bin" / "python", "-c", "import sys; print(sys.version)"], 60,
               env=outside_env()).stdout.startswith(version + ".")
    assert_bot_suite_passes(venv, tmp_path)
