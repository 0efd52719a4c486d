"""A tree of botsvc (this checkout, or a baseline's worktree) imported from
its own folder, under the name that tree's code uses for itself.

Where the code lives and its import name moved twice: the folder ``app/``
imported as ``app`` until the wheel began to install it as ``botsvc``; then
``app/`` as ``botsvc``; since 0.3.0 the folder is named as the import,
``app/botsvc/`` (``app/`` is the source root). ``package_folder`` tells which.
This checkout's .venv maps ``botsvc`` to this checkout's folder, so a
baseline tree run with it would import this tree's code wherever it says
``botsvc``, and a benchmark would compare this tree with itself. A process
that must run a tree's own code puts ``TreeFinder`` first on
``sys.meta_path``: the tree's name and every module under it come from that
tree's folder, and nothing else can answer for them.

- In a process of ours: ``install(tree)`` (scripts/percall_child.py).
- In a process started with ``tree_env(tree)`` in its environment
  (a baseline server: gunicorn, and what ``botsvc serve`` execs), the
  ``sitecustomize`` in ``scripts/tree_site/`` calls ``install`` at start.

Stand-alone on purpose (the standard library only): it must work for any
tree, and import nothing of the tree it lives in.
"""
from __future__ import annotations

import importlib.abc
import importlib.util
import re
import sys
from pathlib import Path

SITE = Path(__file__).resolve().parent / "tree_site"
TREE_VARIABLE = "BOTSVC_BENCH_TREE"
_SELF_IMPORT = re.compile(r"^\s*(?:from|import) (app|botsvc)\b", re.MULTILINE)


def package_folder(tree: str | Path) -> Path:
    """The tree's package folder: ``app/botsvc/`` since the source root was
    named ``app``, ``app/`` before."""
    named = Path(tree) / "app" / "botsvc"
    return named if (named / "__init__.py").is_file() else Path(tree) / "app"


def package_name(tree: str | Path) -> str:
    """The name the tree's code imports itself by: the one its modules use."""
    counts = {"app": 0, "botsvc": 0}
    for path in package_folder(tree).rglob("*.py"):
        for name in _SELF_IMPORT.findall(path.read_text(encoding="utf-8", errors="replace")):
            counts[name] += 1
    if not any(counts.values()):
        raise SystemExit(f"{tree}: no module of app/ imports the package by either name")
    return max(counts, key=counts.__getitem__)


class TreeFinder(importlib.abc.MetaPathFinder):
    """``name`` and ``name.*`` from ``folder``, and from nowhere else."""

    def __init__(self, name: str, folder: Path):
        self.name, self.folder = name, folder

    def find_spec(self, fullname, path=None, target=None):
        if fullname != self.name and not fullname.startswith(self.name + "."):
            return None
        base = self.folder.joinpath(*fullname.split(".")[1:])
        if (base / "__init__.py").is_file():
            return importlib.util.spec_from_file_location(
                fullname, base / "__init__.py", submodule_search_locations=[str(base)])
        if base.with_suffix(".py").is_file():
            return importlib.util.spec_from_file_location(fullname, base.with_suffix(".py"))
        # Not None: the next finder (this checkout's editable install) would
        # answer with this checkout's module of that name.
        raise ModuleNotFoundError(f"No module named {fullname!r} in {self.folder}",
                                  name=fullname)


def install(tree: str | Path) -> str:
    """Import the tree's code, from now on in this process, from its folder;
    its import name."""
    tree = Path(tree).resolve()
    name = package_name(tree)
    loaded = [module for module in sys.modules if module == name or
              module.startswith(name + ".")]
    if loaded:
        raise RuntimeError(f"{name} was imported before {tree} was installed: {loaded[:3]}")
    sys.meta_path.insert(0, TreeFinder(name, package_folder(tree)))
    return name


def tree_env(tree: str | Path) -> dict[str, str]:
    """What a new process's environment needs to run ``tree``'s own code."""
    return {"PYTHONPATH": str(SITE), TREE_VARIABLE: str(Path(tree).resolve())}
