"""The one way this package starts an external program.

Argument lists only (never a shell), a fixed minimal environment, its own
process group killed whole on timeout, and rlimits set in the child before
exec. Anything that is not a normal exit (missing program, exec failure,
timeout, death by signal) becomes DEPENDENCY_UNAVAILABLE: the caller fails
closed and never sees a half-result.
"""
from __future__ import annotations

import logging
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


def _limits(memory_bytes: int, file_bytes: int | None):
    def apply() -> None:
        resource.setrlimit(resource.RLIMIT_AS, (memory_bytes, memory_bytes))
        resource.setrlimit(resource.RLIMIT_CORE, (0, 0))
        if file_bytes is not None:
            resource.setrlimit(resource.RLIMIT_FSIZE, (file_bytes, file_bytes))

    return apply


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
    env = {"PATH": _CHILD_PATH, "LC_ALL": "C", "HOME": cwd, "TMPDIR": cwd}
    try:
        proc = subprocess.Popen(
            [program, *argv[1:]],
            cwd=cwd,
            env=env,
            stdin=subprocess.DEVNULL,
            stdout=subprocess.PIPE,
            stderr=subprocess.PIPE,
            close_fds=True,
            start_new_session=True,
            preexec_fn=_limits(memory_bytes, file_bytes),
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
        # The dynamic loader's codes: a library is missing or, under a too
        # small RLIMIT_AS, cannot be mapped. None of our tools uses them.
        raise tool_failed(dependency, result, "it could not be loaded")
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
