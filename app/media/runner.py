"""The one way this package starts an external program.

Argument lists only (never a shell), a fixed minimal environment, its own
process group killed whole on timeout, and rlimits applied by util-linux
``prlimit`` before it execs the tool. (``preexec_fn`` would set them in the
forked child, but Python documents it as unsafe in a threaded process, and
every gunicorn worker here runs request threads and a scheduler thread: a
fork taken while another thread holds a lock can deadlock the child.)
Anything that is not a normal exit (missing program or prlimit, exec failure,
timeout, death by signal) becomes DEPENDENCY_UNAVAILABLE: the caller fails
closed and never sees a half-result.
"""
from __future__ import annotations

import logging
import math
import os
import resource
import shutil
import signal
import subprocess
from dataclasses import dataclass

from app.errors import dependency_unavailable

log = logging.getLogger("app.media")

# Tools see only this: no proxy variables, no LD_PRELOAD, no locale surprises.
_CHILD_PATH = "/usr/local/bin:/usr/bin:/bin"
# prlimit is part of the operating system (Debian's util-linux), so it is
# looked up in the system directories only, never on a configurable PATH.
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


def limited(argv: list[str], *, timeout: float, memory_bytes: int,
            file_bytes: int | None = None) -> list[str]:
    """``argv`` wrapped in prlimit: address space, CPU time, no core dumps and
    (for converters) the size of any file written, each as soft and hard
    limit. ``argv[0]`` must be absolute: prlimit execs it without a search."""
    prlimit = shutil.which("prlimit", path=PRLIMIT_SEARCH_PATH)
    if prlimit is None:
        raise dependency_unavailable("prlimit", "prlimit (util-linux) is not installed")
    cpu_seconds = math.ceil(timeout * _CPU_PARALLELISM) + 1
    wrapper = [prlimit, f"--as={_within_hard(resource.RLIMIT_AS, memory_bytes)}",
               f"--cpu={_within_hard(resource.RLIMIT_CPU, cpu_seconds)}", "--core=0"]
    if file_bytes is not None:
        wrapper.append(f"--fsize={_within_hard(resource.RLIMIT_FSIZE, file_bytes)}")
    return [*wrapper, "--", *argv]


def _within_hard(which: int, wanted: int) -> int:
    """An unprivileged process may only lower a hard limit: a server started
    under a lower one passes that on (prlimit would refuse to raise it)."""
    hard = resource.getrlimit(which)[1]
    return wanted if hard == resource.RLIM_INFINITY else min(wanted, hard)


def _kill_group(proc: subprocess.Popen) -> None:
    try:
        os.killpg(proc.pid, signal.SIGKILL)
    except (ProcessLookupError, PermissionError):
        pass


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
            start_new_session=True,
        )
    except OSError as exc:
        log.warning("media tool %s could not start: %s", dependency, exc)
        raise dependency_unavailable(dependency, f"{dependency} could not be started") from None
    try:
        stdout, stderr = proc.communicate(timeout=timeout)
    except subprocess.TimeoutExpired:
        # The whole group: a tool's own helpers must not outlive the limit.
        _kill_group(proc)
        proc.communicate()
        log.warning("media tool %s timed out after %.1f s", dependency, timeout)
        raise dependency_unavailable(
            dependency, f"{dependency} did not finish within {timeout:g} s"
        ) from None
    result = ToolResult(proc.returncode, stdout, stderr)
    if proc.returncode in (126, 127):
        # The codes of the dynamic loader and of prlimit's exec: a library is
        # missing or, under a too small RLIMIT_AS, cannot be mapped, or the
        # program cannot be executed. None of our tools uses them.
        raise tool_failed(dependency, result, "it could not be loaded")
    if proc.returncode != 0 and stderr.startswith(b"prlimit: "):
        # prlimit itself failed (it could not set a limit): the tool never ran.
        raise tool_failed("prlimit", result, "the limits could not be applied")
    if proc.returncode < 0:
        log.warning(
            "media tool %s killed by signal %d: %s", dependency, -proc.returncode, result.stderr_tail()
        )
        raise dependency_unavailable(dependency, f"{dependency} crashed")
    return result


def tool_failed(dependency: str, result: ToolResult, what: str):
    """The 503 for a tool that exited with an error the caller cannot blame on
    the input. Its stderr goes to the log only: it may name private paths."""
    log.warning("media tool %s failed (%d): %s", dependency, result.returncode, result.stderr_tail())
    return dependency_unavailable(dependency, f"{dependency} failed: {what}")


def out_of_memory(result: ToolResult) -> bool:
    return b"Cannot allocate memory" in result.stderr or b"malloc of size" in result.stderr
