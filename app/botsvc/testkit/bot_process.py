"""The bot under test as its own process, in any language: what the plugin's
``bot_under_test`` (with ``botsvc_bot_command``) and ``botsvc run-transcript``
start for a test.

The process gets its environment plus two variables: ``BOTSVC_BASE_URL``
(its methods are ``{BOTSVC_BASE_URL}/v2/<method>``) and ``BOTSVC_BOT_TOKEN``
(the token of the bot made for the test). It runs in its own session, so
that stopping it reaches what it started too (``npm start`` runs node, a
shell script runs its bot): SIGTERM to the whole group, SIGKILL after 5 s
(``STOP_GRACE_SECONDS``), and SIGKILL for anything of the group still there.
What it printed, stdout and stderr in the order written, is kept in one file
for the report: ``output_tail()`` is its end.
"""
from __future__ import annotations

import os
import shlex
import subprocess
from collections.abc import Sequence
from pathlib import Path

from botsvc.testkit.server import stop_process_group

STOP_GRACE_SECONDS = 5.0
TAIL_LINES = 20


class BotCannotStart(Exception):
    """The command could not be started at all (no such program, not
    executable, no such directory): one line that says which."""


class BotExited(AssertionError):
    """The bot's process ended while the test still needed it."""


class BotProcess:
    """``start()`` it with the bot's address and token, ``check()`` that it
    still runs, ``stop()`` it; ``output_path`` keeps what it printed."""

    def __init__(self, argv: Sequence[str], *, base_url: str, token: str,
                 output_path: str | os.PathLike, cwd: str | os.PathLike | None = None):
        self.argv = list(argv)
        self.cwd = cwd
        self.output_path = Path(output_path)
        self.env = {**os.environ, "BOTSVC_BASE_URL": base_url, "BOTSVC_BOT_TOKEN": token}
        self.process: subprocess.Popen | None = None
        self.stopped_by_us = False

    @property
    def command(self) -> str:
        return shlex.join(self.argv)

    def start(self) -> BotProcess:
        self.output_path.parent.mkdir(parents=True, exist_ok=True)
        with open(self.output_path, "ab") as output:
            try:
                self.process = subprocess.Popen(self.argv, cwd=self.cwd, env=self.env,
                                                stdin=subprocess.DEVNULL, stdout=output,
                                                stderr=subprocess.STDOUT,
                                                start_new_session=True)
            except OSError as refused:
                reason = refused.strerror or str(refused)
                raise BotCannotStart(f"cannot start the bot command {self.command!r}:"
                                     f" {reason}" + (f": {refused.filename}"
                                                     if refused.filename else "")) from None
        return self

    def exit_status(self) -> int | None:
        """None while it runs; its exit status (minus a signal's number) once it ended."""
        return None if self.process is None else self.process.poll()

    def check(self) -> None:
        """Raise ``BotExited`` (an AssertionError: it fails the test's step)
        naming the exit status and the last lines, if the bot is gone."""
        __tracebackhide__ = True   # the failure points at the test's line
        status = self.exit_status()
        if status is not None and not self.stopped_by_us:
            raise BotExited(f"the bot under test ({self.command}) exited with {_status(status)};"
                            f" its last lines:\n{self.output_tail()}")

    def stop(self, grace: float = STOP_GRACE_SECONDS) -> int | None:
        """SIGTERM, then SIGKILL after ``grace`` seconds; returns the exit status."""
        if self.process is None:
            return None
        self.stopped_by_us = self.process.poll() is None
        stop_process_group(self.process, timeout=grace)
        return self.process.returncode

    def output(self) -> str:
        try:
            return self.output_path.read_text(errors="replace")
        except OSError:
            return ""

    def report_section(self) -> tuple[str, str]:
        """A failing test's report section: all it printed."""
        return (f"botsvc: what the bot under test printed ({self.command})",
                self.output() or "(nothing)")

    def output_tail(self, lines: int = TAIL_LINES) -> str:
        kept = self.output().splitlines()[-lines:]
        return "\n".join(f"  | {line}" for line in kept) if kept else "  (it printed nothing)"


def _status(status: int) -> str:
    return f"signal {-status}" if status < 0 else f"status {status}"
