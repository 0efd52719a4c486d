"""The one way this package starts an external program.

Argument lists only (never a shell), a fixed minimal environment, rlimits
applied by util-linux ``prlimit`` before it execs the tool, and a tool that
dies with the process that started it: util-linux ``setpriv --pdeathsig
KILL`` asks the kernel to kill it when its parent (the thread that started
it, which waits for it) goes, and it stays in the server's process group, so
a signal to the whole server reaches it too. (``preexec_fn`` could do both in
the forked child, but Python documents it as unsafe in a threaded process,
and every gunicorn worker here runs request threads and a scheduler thread: a
fork taken while another thread holds a lock can deadlock the child.) On
timeout the tool and everything it started are killed.
Anything that is not a normal exit (missing program, prlimit or setpriv,
exec failure, timeout, death by signal) becomes DEPENDENCY_UNAVAILABLE: the
caller fails closed and never sees a half-result.
"""
from __future__ import annotations

import logging
import math
import os
import resource
import shutil
import signal
import subprocess
import time
from dataclasses import dataclass

from botsvc import metrics, owner
from botsvc.errors import dependency_unavailable

log = logging.getLogger("botsvc.media")

# Every ``dependency`` a tool runs under: the label values of
# botsvc_media_tool_duration_seconds.
TOOLS = ("ffmpeg", "ffprobe", "clamav", "pikepdf")

# Tools see only this: no proxy variables, no LD_PRELOAD, no locale surprises.
_CHILD_PATH = "/usr/local/bin:/usr/bin:/bin"
# prlimit and setpriv are part of the operating system (Debian's util-linux),
# so they are looked up in the system directories only, never on a
# configurable PATH.
PRLIMIT_SEARCH_PATH = "/usr/bin:/bin:/usr/sbin:/sbin"
# RLIMIT_CPU is a backstop behind the wall-clock timeout, never the rule: it
# counts the CPU time of all threads, so it allows the timeout on every core
# a tool may use (ffmpeg runs at most 8 threads).
_CPU_PARALLELISM = min(os.cpu_count() or 1, 8)


@dataclass
class ToolResult:
    returncode: int
    stdout: bytes
    stderr: bytes

    def stderr_tail(self, limit: int = 600) -> str:
        return self.stderr[-limit:].decode("utf-8", "replace")


def resolve(program: str, dependency: str) -> str:
    """Absolute path of ``program`` (looked up on the server's PATH unless it
    is absolute), or a 503."""
    found = shutil.which(program)
    if found is None:
        raise dependency_unavailable(dependency, f"{dependency} is not installed")
    return found


def _system_tool(name: str) -> str:
    found = shutil.which(name, path=PRLIMIT_SEARCH_PATH)
    if found is None:
        raise dependency_unavailable(name, f"{name} (util-linux) is not installed")
    return found


def limited(argv: list[str], *, timeout: float, memory_bytes: int,
            file_bytes: int | None = None) -> list[str]:
    """``argv`` wrapped in prlimit and setpriv: address space, CPU time, no
    core dumps and (for converters) the size of any file written, each as
    soft and hard limit; then killed when its parent dies, and no new
    privileges (set-user-id bits are ignored). Each execs the next in the same
    process; ``argv[0]`` must be absolute, as neither searches for it."""
    prlimit = _system_tool("prlimit")
    setpriv = _system_tool("setpriv")
    cpu_seconds = math.ceil(timeout * _CPU_PARALLELISM) + 1
    wrapper = [prlimit, f"--as={_within_hard(resource.RLIMIT_AS, memory_bytes)}",
               f"--cpu={_within_hard(resource.RLIMIT_CPU, cpu_seconds)}", "--core=0"]
    if file_bytes is not None:
        wrapper.append(f"--fsize={_within_hard(resource.RLIMIT_FSIZE, file_bytes)}")
    # prlimit's options end at the first word that is not one (setpriv).
    return [*wrapper, setpriv, "--no-new-privs", "--pdeathsig", "KILL", "--", *argv]


def _within_hard(which: int, wanted: int) -> int:
    """An unprivileged process may only lower a hard limit: a server started
    under a lower one passes that on (prlimit would refuse to raise it)."""
    hard = resource.getrlimit(which)[1]
    return wanted if hard == resource.RLIM_INFINITY else min(wanted, hard)


def _children(pid: int) -> list[int]:
    """Processes whose parent is ``pid`` (the kernel may lack
    /proc/PID/task/TID/children, so every process's stat is read)."""
    return [int(entry) for entry in os.listdir("/proc") if entry.isdigit()
            and (found := owner.proc_stat(int(entry))) is not None and found.parent == pid]


def _wait_until(pids: list[int], states: str, deadline: float) -> None:
    """Until each process is in one of ``states`` or gone (or the deadline)."""
    for pid in pids:
        while time.monotonic() < deadline:
            found = owner.proc_stat(pid)
            if found is None or found.state in states:
                break
            time.sleep(0.005)


def _kill_tree(root: int) -> None:
    """SIGKILL ``root`` (a tool) and every process it started, and return once
    they are dead. Each process is stopped before its children are listed, so
    none can start another unseen; a stopped parent cannot reap a child, so
    no listed pid can be reused meanwhile."""
    deadline = time.monotonic() + 5.0
    found, pending = [], [root]
    while pending:
        pid = pending.pop()
        try:
            os.kill(pid, signal.SIGSTOP)
        except ProcessLookupError:
            continue
        _wait_until([pid], "TtZX", deadline)
        found.append(pid)
        pending.extend(_children(pid))
    for pid in found:
        try:
            os.kill(pid, signal.SIGKILL)
        except ProcessLookupError:
            pass
    _wait_until(found, "ZX", deadline)


def run_tool(
    argv: list[str],
    *,
    dependency: str,
    cwd: str,
    timeout: float,
    memory_bytes: int,
    file_bytes: int | None = None,
) -> ToolResult:
    """Run ``argv`` inside ``cwd`` and return its exit code and output.

    A non-zero exit is returned, not raised: only the caller knows whether it
    means "bad input" or "broken tool".
    """
    program = resolve(argv[0], dependency)
    command = limited([program, *argv[1:]], timeout=timeout, memory_bytes=memory_bytes,
                      file_bytes=file_bytes)
    env = {"PATH": _CHILD_PATH, "LC_ALL": "C", "HOME": cwd, "TMPDIR": cwd}
    try:
        proc = subprocess.Popen(
            command,
            cwd=cwd,
            env=env,
            stdin=subprocess.DEVNULL,
            stdout=subprocess.PIPE,
            stderr=subprocess.PIPE,
            close_fds=True,
        )
    except OSError as exc:
        log.warning("media tool %s could not start: %s", dependency, exc)
        raise dependency_unavailable(dependency, f"{dependency} could not be started") from None
    result = _finish(proc, dependency, timeout)
    _check_ran(result, dependency)
    return result


def _finish(proc: subprocess.Popen, dependency: str, timeout: float) -> ToolResult:
    """The tool's exit and output, or DEPENDENCY_UNAVAILABLE at its time limit."""
    started = time.monotonic()
    try:
        stdout, stderr = proc.communicate(timeout=timeout)
    except subprocess.TimeoutExpired:
        # The whole tree: a tool's own helpers must not outlive the limit.
        _kill_tree(proc.pid)
        proc.communicate()
        log.warning("media tool %s timed out after %.1f s", dependency, timeout)
        raise dependency_unavailable(
            dependency, f"{dependency} did not finish within {timeout:g} s"
        ) from None
    finally:
        metrics.media_tool(dependency, time.monotonic() - started)
    return ToolResult(proc.returncode, stdout, stderr)


def _check_ran(result: ToolResult, dependency: str) -> None:
    """Raise when the tool never really ran or crashed: that is the tool's
    fault (503), whatever the input was."""
    if result.returncode in (126, 127):
        # The codes of the dynamic loader and of prlimit's exec: a library is
        # missing or, under a too small RLIMIT_AS, cannot be mapped, or the
        # program cannot be executed. None of our tools uses them.
        raise tool_failed(dependency, result, "it could not be loaded")
    for wrapper in ("setpriv", "prlimit"):
        if result.returncode != 0 and result.stderr.startswith(wrapper.encode() + b": "):
            # The wrapper itself failed (it could not set a limit): the tool never ran.
            raise tool_failed(wrapper, result, "the limits could not be applied")
    if result.returncode < 0:
        log.warning(
            "media tool %s killed by signal %d: %s", dependency, -result.returncode,
            result.stderr_tail()
        )
        raise dependency_unavailable(dependency, f"{dependency} crashed")


def tool_failed(dependency: str, result: ToolResult, what: str):
    """The 503 for a tool that exited with an error the caller cannot blame on
    the input. Its stderr goes to the log only: it may name private paths."""
    log.warning("media tool %s failed (%d): %s", dependency, result.returncode, result.stderr_tail())
    return dependency_unavailable(dependency, f"{dependency} failed: {what}")


def out_of_memory(result: ToolResult) -> bool:
    return b"Cannot allocate memory" in result.stderr or b"malloc of size" in result.stderr
