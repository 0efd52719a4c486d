"""The benchmarks compare two trees, not one with itself: a tree is imported
from its own folder under the name its code uses (``app`` before the wheel
installed ``botsvc``, ``botsvc`` since), even where this checkout's .venv
maps ``botsvc`` to this checkout (scripts/tree_import.py). Checked with the
percall child as ``scripts/bench percall`` runs it, and with the environment
a baseline server gets (scripts/bench_baseline.py)."""
from __future__ import annotations

import importlib.util
import io
import json
import os
import re
import subprocess
import sys
import tarfile
from pathlib import Path

import pytest

from botsvc.devkit.paths import REPO

CHILD = REPO / "scripts" / "percall_child.py"


def _script(name: str):
    """scripts/NAME.py loaded from its file, as the benchmark's children load
    it (tests/ never imports the scripts/ tree as a package)."""
    spec = importlib.util.spec_from_file_location(f"_bench_{name}", REPO / "scripts" / f"{name}.py")
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module


_tree_import = _script("tree_import")   # the standard library only
package_name, tree_env = _tree_import.package_name, _tree_import.tree_env
package_folder = _tree_import.package_folder
# The baseline the percall bench compares with, read from its script.
BASELINE_COMMIT = re.search(r'^BASELINE_COMMIT = "([0-9a-f]{40})"',
                            (REPO / "scripts" / "bench_percall.py").read_text(), re.M).group(1)


def tree_of(commit: str, into: Path) -> Path:
    """The code of ``commit`` (its app/ and migrations/), as a worktree has it."""
    archive = subprocess.run(["git", "-C", str(REPO), "archive", commit, "app", "migrations"],
                             capture_output=True, check=True, timeout=60).stdout
    tarfile.open(fileobj=io.BytesIO(archive)).extractall(into, filter="data")
    return into


def loaded(tree: Path, data_dir: Path) -> dict:
    data_dir.mkdir()
    done = subprocess.run([sys.executable, str(CHILD), str(tree), str(data_dir), "--where"],
                          capture_output=True, text=True, timeout=120)
    assert done.returncode == 0, done.stderr[-3000:]
    return json.loads(done.stdout)


def assert_all_from(found: dict, tree: Path) -> set[str]:
    files = set(found["files"])
    assert len(files) > 50   # the app was built: its methods, jobs, routes
    assert all(Path(file).is_relative_to(package_folder(tree)) for file in files), files
    return files


@pytest.fixture(scope="module")
def this_tree_loaded(tmp_path_factory) -> dict:
    """This checkout as the percall child loads it: the same for both trees
    it is compared with, so loaded once."""
    return loaded(REPO, tmp_path_factory.mktemp("percall") / "data-this")


@pytest.mark.parametrize("other", ["baseline", "copy"])
def test_the_percall_child_loads_each_tree_from_its_own_files(tmp_path, other, this_tree_loaded):
    """The baseline commit's tree (its code says ``app``), or a copy of this
    tree (``botsvc``, the name this .venv maps to this checkout), beside this
    tree: each one's modules are its own files, none shared."""
    commit = BASELINE_COMMIT if other == "baseline" else "HEAD"
    tree = tree_of(commit, tmp_path / other)
    theirs = loaded(tree, tmp_path / "data-other")
    ours = this_tree_loaded
    assert (theirs["name"], ours["name"]) == (
        "app" if other == "baseline" else "botsvc", "botsvc")
    assert not assert_all_from(theirs, tree) & assert_all_from(ours, REPO)


def test_a_baseline_server_s_environment_imports_the_tree_in_every_process(tmp_path):
    """What a baseline server gets (tree_env): its python, and what it execs
    (``botsvc serve`` becomes gunicorn), import the tree's code."""
    tree = tree_of("HEAD", tmp_path / "copy")
    assert package_name(tree) == "botsvc"
    env = {**{k: v for k, v in os.environ.items() if k != "PYTHONPATH"}, **tree_env(tree)}
    code = ("import os, sys; os.execv(sys.executable, [sys.executable, '-c', "
            "'import botsvc.cli, botsvc.config as c; print(c.__file__)'])")
    done = subprocess.run([sys.executable, "-c", code], env=env, cwd=tmp_path,
                          capture_output=True, text=True, timeout=60)
    assert done.returncode == 0, done.stderr
    assert done.stdout.strip() == str(tree / "app" / "botsvc" / "config.py")
