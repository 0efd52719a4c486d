"""scripts/bootstrap says what it is doing during the minute of pip install
on a first start: a line every ten packages, then how many it installed; a
failed install shows pip's last lines and where its whole output is, and
leaves the stamp unwritten (the next start tries again). Run on a copy of
the script beside a stand-in pip (and dpkg-query: no Debian package is
installed here), so the test takes no minute and touches no .venv."""
from __future__ import annotations

import os
import shutil
import stat
import subprocess
from pathlib import Path

from botsvc.devkit.paths import REPO

# What pip prints, in its own words, for a fresh install of 25 packages.
PIP_OUTPUT = "\n".join([
    "Obtaining file:///checkout",
    *[f"Collecting package-{i}>=1.0 (from botsvc==0.2.0)" for i in range(1, 24)],
    "  Using cached package_23-1.0-py3-none-any.whl.metadata (2.1 kB)",
    "Requirement already satisfied: pip-old in ./.venv/lib/python3.11/site-packages (24.0)",
    "Collecting flask<4,>=3.1 (from botsvc==0.2.0)",
    "Installing collected packages: " + ", ".join(f"package-{i}" for i in range(1, 25)),
    "Successfully installed " + " ".join(f"package-{i}-1.0" for i in range(1, 26)),
])


def executable(path: Path, text: str) -> None:
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_text(text)
    path.chmod(path.stat().st_mode | stat.S_IXUSR)


def bootstrap(tmp_path: Path, pip_status: int) -> tuple[subprocess.CompletedProcess, Path]:
    root = tmp_path / "checkout"
    (root / "scripts").mkdir(parents=True)
    shutil.copy(REPO / "scripts" / "bootstrap", root / "scripts" / "bootstrap")
    for name in ("setup.cfg", "setup.py", "pyproject.toml"):
        (root / name).write_text(name)
    venv = root / ".venv"
    executable(venv / "bin" / "python", "#!/bin/sh\n")
    (tmp_path / "pip-output").write_text(PIP_OUTPUT + "\n")
    executable(venv / "bin" / "pip", f"#!/bin/sh\ncat {tmp_path / 'pip-output'}\n"
                                     f"exit {pip_status}\n")
    executable(tmp_path / "bin" / "dpkg-query", "#!/bin/sh\nprintf 'install ok installed'\n")
    env = {name: value for name, value in os.environ.items()
           if not name.startswith(("BOTSVC_", "VIRTUAL_ENV"))}
    env["PATH"] = f"{tmp_path / 'bin'}{os.pathsep}{env['PATH']}"
    done = subprocess.run(["bash", "-c", "source scripts/bootstrap"], cwd=root, env=env,
                          capture_output=True, text=True, timeout=60)
    return done, venv


def test_a_first_install_says_how_far_it_is(tmp_path):
    done, venv = bootstrap(tmp_path, pip_status=0)
    assert done.returncode == 0, done.stderr
    assert done.stderr.splitlines() == [
        "bootstrap: installing the package and its dependencies into .venv"
        " (about a minute the first time)",
        "bootstrap: 1 packages so far (package-1)",
        "bootstrap: 11 packages so far (package-11)",
        "bootstrap: 21 packages so far (package-21)",
        "bootstrap: 25 packages found, installing",
        "bootstrap: installed 25 packages",
    ]
    assert (venv / ".botsvc-installed").is_file()
    assert (venv / "pip-install.log").read_text() == PIP_OUTPUT + "\n"


def test_a_failed_install_shows_pip_s_last_lines_and_stamps_nothing(tmp_path):
    done, venv = bootstrap(tmp_path, pip_status=1)
    assert done.returncode == 1
    lines = done.stderr.splitlines()
    assert lines[-21:-1] == PIP_OUTPUT.splitlines()[-20:]
    assert lines[-1] == f"bootstrap: pip install failed (its whole output: {venv}/pip-install.log)"
    assert not (venv / ".botsvc-installed").exists()
