"""The plan of the package holds (docs/DEVELOPING.md "The layers"): the
import-linter contracts in setup.cfg pass, no two rooms of app/botsvc/ import
each other in a circle (an import inside a function counts), an import of the
project placed inside a function says why on its line, and nothing imports
the source root by its name ``app`` (it is a folder on the path, not a
package).

The trees around it hold too: scripts/ and tests/ never import each other
(what both need is the development kit, app/botsvc/devkit/, a room of the package
that imports neither, left out of the wheel; the package imports neither
tree); no two modules of scripts/ import each other in a circle, and their
imports of the project inside a function say why."""
from __future__ import annotations

import ast
import configparser
import functools
import re
import subprocess
import sys
from pathlib import Path

from botsvc.devkit.paths import REPO

APP = REPO / "app" / "botsvc"
TREES = ("scripts",)   # checked module by module, besides the package's rooms


def test_the_import_linter_contracts_hold():
    lint = Path(sys.executable).parent / "lint-imports"
    done = subprocess.run([str(lint), "--config", "setup.cfg", "--no-cache"], cwd=REPO,
                          capture_output=True, text=True, timeout=300)
    assert done.returncode == 0, done.stdout[-4000:] + done.stderr[-2000:]
    assert "0 broken" in done.stdout


@functools.cache
def _imports(path: Path) -> list[tuple[str, int, bool]]:
    """(imported module, line, inside a function) for every import in ``path``,
    relative imports resolved; parsed once per session (several checks read
    the same files)."""
    return list(_parse_imports(path))


def _parse_imports(path: Path):
    parts = path.relative_to(REPO).with_suffix("").parts[:-1]
    if parts[:1] == ("app",):   # app/ is the source root: app/botsvc/ is the package botsvc
        parts = parts[1:]
    package = ".".join(parts)
    tree = ast.parse(path.read_text(encoding="utf-8"))
    in_functions = {id(node) for function in ast.walk(tree)
                    if isinstance(function, (ast.FunctionDef, ast.AsyncFunctionDef))
                    for node in ast.walk(function)}
    for node in ast.walk(tree):
        if isinstance(node, ast.Import):
            names = [alias.name for alias in node.names]
        elif isinstance(node, ast.ImportFrom):
            base = node.module or ""
            if node.level:
                parts = package.split(".")[: len(package.split(".")) - node.level + 1]
                base = ".".join(parts + ([base] if base else []))
            names = [base] + [f"{base}.{alias.name}" for alias in node.names]
        else:
            continue
        for name in names:
            yield name, node.lineno, id(node) in in_functions


def _room(module: str) -> str | None:
    parts = module.split(".")
    return parts[1] if len(parts) > 1 and parts[0] == "botsvc" else None


def _rooms():
    return {p.stem if p.is_file() else p.name for p in APP.iterdir()
            if (p.suffix == ".py" and p.stem != "__init__")
            or (p.is_dir() and (p / "__init__.py").exists())}


def _circles(edges: dict[str, set[str]]) -> list[tuple[str, str]]:
    """The pairs of nodes that reach each other."""
    def reaches(start: str, goal: str) -> bool:
        seen, todo = set(), [start]
        while todo:
            node = todo.pop()
            if node == goal:
                return True
            if node not in seen:
                seen.add(node)
                todo.extend(edges.get(node, ()))
        return False

    return sorted({tuple(sorted((a, b))) for a in edges for b in edges[a] if reaches(b, a)})


def _tree_modules() -> dict[str, Path]:
    """Every module of scripts/ by its dotted name."""
    return {".".join(path.relative_to(REPO).with_suffix("").parts): path
            for tree in TREES for path in (REPO / tree).glob("*.py")}


def _imported_module(name: str, modules) -> str | None:
    """The module of ``modules`` that ``name`` (a module or a name in one) is."""
    while name and name not in modules:
        name = name.rpartition(".")[0]
    return name or None


def test_no_two_rooms_of_app_import_each_other_in_a_circle():
    rooms = _rooms()
    edges: dict[str, set[str]] = {room: set() for room in rooms}
    for path in APP.rglob("*.py"):
        here = _room(".".join(path.relative_to(REPO).with_suffix("").parts))
        if here not in rooms:
            continue
        for module, _line, _late in _imports(path):
            there = _room(module)
            if there in rooms and there != here:
                edges[here].add(there)

    assert _circles(edges) == []


def test_an_import_of_the_project_inside_a_function_says_why():
    unexplained = []
    for path in APP.rglob("*.py"):
        lines = path.read_text(encoding="utf-8").splitlines()
        for module, line, late in _imports(path):
            if late and module.startswith("botsvc") and "#" not in lines[line - 1]:
                unexplained.append(f"{path.relative_to(REPO)}:{line}")
    assert sorted(set(unexplained)) == []


def test_nothing_imports_the_folder_as_app():
    """app/ is the source root, not a package. From a checkout's top,
    ``from app.botsvc import ...`` would still import (a namespace package)
    and load a second copy of every module it reaches beside the installed
    one (a catalogue with 0 methods, a second settings object): no module of
    the project, its tests or its scripts names ``app`` as a package."""
    sources = [*APP.rglob("*.py"), *(REPO / "tests").rglob("*.py"),
               *(REPO / "scripts").rglob("*.py"),
               REPO / "wsgi.py", REPO / "setup.py"]
    stale = [f"{path.relative_to(REPO)}:{line}" for path in sources
             for module, line, _ in _imports(path)
             if module == "app" or module.startswith("app.")]
    assert stale == []


def test_no_two_modules_of_scripts_import_each_other_in_a_circle():
    modules = _tree_modules()
    edges: dict[str, set[str]] = {name: set() for name in modules}
    for name, path in modules.items():
        for imported, _line, _late in _imports(path):
            there = _imported_module(imported, modules)
            if there is not None and there != name and there != name.partition(".")[0]:
                edges[name].add(there)
    assert _circles(edges) == []


def test_an_import_of_the_project_inside_a_function_of_scripts_says_why():
    unexplained = []
    for path in _tree_modules().values():
        lines = path.read_text(encoding="utf-8").splitlines()
        for module, line, late in _imports(path):
            if (late and module.split(".")[0] in ("botsvc", "scripts", "tests")
                    and "#" not in lines[line - 1]):
                unexplained.append(f"{path.relative_to(REPO)}:{line}")
    assert sorted(set(unexplained)) == []


FORBIDDEN = {
    "app": ("tests", "scripts"),   # the package stands alone; its devkit serves both
    "scripts": ("tests",),
    "tests": ("scripts",),
}


def test_scripts_and_tests_never_import_each_other():
    reached = []
    for tree, forbidden in FORBIDDEN.items():
        for path in (REPO / tree).rglob("*.py"):
            for module, line, _late in _imports(path):
                if module.split(".")[0] in forbidden:
                    reached.append(f"{path.relative_to(REPO)}:{line} imports {module}")
    assert sorted(set(reached)) == []


def _contracts() -> dict[str, list[str]]:
    """Each layers contract of setup.cfg: its container and its rooms, top down."""
    config = configparser.ConfigParser()
    config.read(REPO / "setup.cfg")
    found = {}
    for section in config.sections():
        if section.startswith("importlinter:contract:") and config[section]["type"] == "layers":
            rooms = [room.strip() for line in config[section]["layers"].strip().splitlines()
                     for room in line.split("|")]
            found[config[section]["containers"].strip()] = rooms
    return found


def test_developing_names_the_rooms_of_the_contract_in_its_order():
    """DEVELOPING.md's table of the layers says why; setup.cfg is the list. The
    table names the same rooms in the same order (the rooms of an inner
    contract, such as the catalogue's, in their own order)."""
    text = (REPO / "docs" / "DEVELOPING.md").read_text(encoding="utf-8")
    table = text[text.index("| Layer (top down) | Rooms |"):]
    table = table[:table.index("\n\n")]
    named = [name for line in table.splitlines()[2:]
             for name in re.findall(r"`([a-z_]+)`", line.split("|")[2])]
    assert named
    contracts = _contracts()
    outer = contracts.pop("botsvc")
    assert [name for name in named if name in outer] == outer
    for container, inner in contracts.items():
        room = container.removeprefix("botsvc.")
        assert [name for name in named if name in inner] == inner, room
    assert set(named) == set(outer).union(*contracts.values())
