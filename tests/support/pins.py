"""The one pin setup.cfg gives a dependency, for the tests that hold a
library whose internals we touch to the minor range they were checked on."""
from __future__ import annotations

import configparser

from packaging.requirements import Requirement

from botsvc.devkit.paths import REPO


def pinned(name: str) -> Requirement:
    """setup.cfg's install_requires line for ``name``; exactly one."""
    setup = configparser.ConfigParser()
    setup.read(REPO / "setup.cfg")
    found = [Requirement(line) for line in setup["options"]["install_requires"].splitlines()
             if line.strip() and not line.lstrip().startswith("#")
             and Requirement(line).name == name]
    assert len(found) == 1, found
    return found[0]
