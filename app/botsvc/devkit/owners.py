"""Processes as /proc shows them, read here on their own (not through the
code under test), and owner tokens of processes that are gone: for the tests
of what a killed process leaves behind (``from owners import dead_owner``)."""
from __future__ import annotations

import os
import subprocess

from botsvc import owner


def _stat(pid: int | str) -> tuple[str, list[str]] | None:
    """(command name, fields after it) of ``pid``, or None if there is none."""
    try:
        stat = open(f"/proc/{pid}/stat").read()
    except OSError:
        return None
    return stat[stat.index("(") + 1:stat.rindex(")")], stat[stat.rindex(")") + 2:].split()


def alive(pid: int) -> bool:
    found = _stat(pid)
    return found is not None and found[1][0] not in "ZX"  # a zombie is dead


def processes() -> list[tuple[int, str, int]]:
    """(pid, command name, parent pid) of every live process."""
    found = []
    for entry in os.listdir("/proc"):
        if entry.isdigit() and (stat := _stat(entry)) and stat[1][0] not in "ZX":
            found.append((int(entry), stat[0], int(stat[1][1])))
    return found


def children(pid: int) -> list[int]:
    return [child for child, _, parent in processes() if parent == pid]


def cpu_seconds(pid: int) -> float:
    """User and system CPU time ``pid`` has used so far."""
    fields = _stat(pid)[1]
    return (int(fields[11]) + int(fields[12])) / os.sysconf("SC_CLK_TCK")


def resident_bytes(pid: int) -> int:
    with open(f"/proc/{pid}/status") as status:
        for line in status:
            if line.startswith("VmRSS:"):
                return int(line.split()[1]) * 1024
    raise LookupError(f"no VmRSS for {pid}")


def dead_owner() -> str:
    """The owner token a process had before it was killed."""
    child = subprocess.Popen(["sleep", "30"])
    start = int(_stat(child.pid)[1][19])
    child.kill()
    child.wait()
    boot, namespace, _, _ = owner.current().split("-")
    return f"{boot}-{namespace}-{child.pid}-{start}"
