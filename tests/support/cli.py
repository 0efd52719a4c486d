"""The ``botsvc`` command run in this process, as a shell would run it: the
console script's own entry point (``botsvc.cli:main``), its arguments, its
environment, its stdout, stderr and exit status. A new interpreter costs
about 0.7 s of start-up a command; the tests of the installed console script
itself (``.venv/bin/botsvc``: tests/ops/test_operator.py, the README's
examples) still start one.

Python prints the message of a ``SystemExit("botsvc: ...")`` on stderr and
exits 1; click's runner writes it to stdout, so it is moved back here."""
from __future__ import annotations

from dataclasses import dataclass

from click.testing import CliRunner

from botsvc.cli import main


@dataclass(frozen=True)
class Done:
    returncode: int
    stdout: str
    stderr: str


def botsvc(*args: str, env: dict[str, str | None]) -> Done:
    """``botsvc ARGS...`` with ``env`` over this process's environment (a
    None value unsets the variable)."""
    result = CliRunner().invoke(main, list(args), env=env, catch_exceptions=False)
    stdout, stderr = result.stdout, result.stderr
    exit_message = getattr(result.exception, "code", None)
    if isinstance(exit_message, str) and stdout.endswith(exit_message + "\n"):
        stdout = stdout[: -len(exit_message) - 1]
        stderr += exit_message + "\n"
    return Done(result.exit_code, stdout, stderr)
