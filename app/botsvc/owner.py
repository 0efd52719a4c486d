"""Which process owns a claim or a leftover file, and whether it still lives.

An owner is ``<boot id>-<pid namespace>-<pid>-<start time>``: the start time
(clock ticks after boot, from /proc) tells a reused pid from the process that
had it, and the boot id a process from before a reboot. Idempotency claims
record their owner, and quarantine and work files carry it in their names, so
the start of any process (and any duplicate request) can release or remove
at once what a killed process left behind, while never touching the work of
a live one.

A process in another pid namespace (a container sharing the data dir) cannot
be seen from here: its liveness is unknown, and callers fall back to age.
"""
from __future__ import annotations

import os
import re
from typing import NamedTuple

TOKEN = r"[0-9a-f]{12}-\d+-\d+-\d+"
_TAGGED_NAME = re.compile(rf"^[a-z]+-({TOKEN})-")
_cache: tuple[int, str] | None = None


def _boot_id() -> str:
    with open("/proc/sys/kernel/random/boot_id") as fh:
        return fh.read().strip().replace("-", "")[:12]


def _pid_namespace(pid: int | str = "self") -> str:
    try:
        return re.sub(r"\D", "", os.readlink(f"/proc/{pid}/ns/pid")) or "0"
    except OSError:
        return "0"


class ProcStat(NamedTuple):
    state: str        # R, S, D, T, Z (zombie: dead, not yet reaped), X ...
    parent: int
    start_time: int   # clock ticks after boot


def proc_stat(pid: int) -> ProcStat | None:
    """What /proc says of ``pid``, or None when there is no such process."""
    try:
        with open(f"/proc/{pid}/stat") as fh:
            stat = fh.read()
    except OSError:
        return None
    # The command name may hold spaces and parentheses: fields follow the last ')'.
    fields = stat[stat.rindex(")") + 2:].split()
    return ProcStat(fields[0], int(fields[1]), int(fields[19]))


def is_dead(found: ProcStat | None) -> bool:
    return found is None or found.state in ("Z", "X")


def current() -> str:
    """This process's owner token (computed again after a fork)."""
    global _cache
    pid = os.getpid()
    if _cache is None or _cache[0] != pid:
        _cache = (pid, f"{_boot_id()}-{_pid_namespace()}-{pid}-{proc_stat(pid).start_time}")
    return _cache[1]


def is_alive(token: str | None) -> bool | None:
    """True or False when it can tell, None when it cannot (no token, or a
    process in another pid namespace)."""
    if not token or not re.fullmatch(TOKEN, token):
        return None
    boot, namespace, pid, start = token.split("-")
    if boot != _boot_id():
        return False  # the machine restarted since: nothing of that boot runs
    if namespace != _pid_namespace():
        return None
    found = proc_stat(int(pid))
    return not is_dead(found) and found.start_time == int(start)


def file_prefix(kind: str) -> str:
    """The start of a temporary file or directory name owned by this process:
    ``upload-<owner>-`` (the random part follows)."""
    return f"{kind}-{current()}-"


def owner_of(name: str) -> str | None:
    """The owner token a file name carries, if it carries one."""
    match = _TAGGED_NAME.match(name)
    return match.group(1) if match else None
