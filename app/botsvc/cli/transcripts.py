"""``botsvc run-transcript FILE... [--junit-xml PATH] [--timeout S] -- COMMAND...``:
each transcript replayed against a bot in any language, run as its own
process (``testkit.bot_process``) for a new bot of its own, by the exported
pytest module's step engine (``testkit.transcript``, ``testkit.conversation``).

The server is the one BOTSVC_URL and BOTSVC_ADMIN_TOKEN name, else one it
starts (the pytest plugin's quick server, in a temporary dir) and stops.
Output: ``PASS FILE`` or ``FAIL FILE: step N (...)`` with what was expected
beside what the bot did and the bot's last lines, then ``N passed, M
failed``. Exit 0 when all passed, 1 when any failed, 2 with one line when a
FILE is not a transcript, COMMAND cannot start, or the server cannot be
reached. Every bot process is stopped (SIGTERM, then SIGKILL after 5 s),
also when the run itself is stopped by SIGTERM or Ctrl-C.
"""
from __future__ import annotations

import contextlib
import os
import signal
import tempfile
import time
from dataclasses import dataclass
from pathlib import Path

import click
import requests

from botsvc.cli.base import main, say
from botsvc.cli.junit import write_junit
from botsvc.cli.remote import unreachable_reason
from botsvc.config import SettingError, Settings
from botsvc.testkit.bot_process import BotCannotStart, BotProcess
from botsvc.testkit.client import BotsvcError
from botsvc.testkit.harness import Botsvc
from botsvc.testkit.server import QUICK_ENV, LocalServer
from botsvc.testkit.transcript import NotATranscript, load, replay

USAGE = 2   # a bad file, a command that cannot start, a server out of reach


class Stop(click.ClickException):
    """One line on stderr and exit status 2 (the bots and the server it
    started are stopped on the way out)."""
    exit_code = USAGE

    def show(self, file=None) -> None:
        click.echo(f"botsvc: {self.message}", err=True)


@dataclass
class Outcome:
    file: str
    failure: str | None      # the engine's text: "step N (...), reaction K:\n  expected..."
    output: str              # what the bot printed
    tail: str                # its last lines, as shown
    seconds: float


class RunTranscript(click.Command):
    """FILE... before ``--``, the bot's COMMAND after it (kept whole: its own
    options are not ours)."""

    def parse_args(self, ctx: click.Context, args: list[str]) -> list[str]:
        if "--" in args:
            cut = args.index("--")
            args, ctx.meta["bot_command"] = args[:cut], args[cut + 1:]
        return super().parse_args(ctx, args)


@main.command("run-transcript", cls=RunTranscript,
              short_help="Replay transcripts against a bot process (any language).")
@click.argument("files", nargs=-1, required=True, metavar="FILE...")
@click.option("--junit-xml", "junit_xml", type=click.Path(dir_okay=False),
              help="also write JUnit XML here: one testcase per FILE")
@click.option("--timeout", type=click.FloatRange(min=0, min_open=True), default=10.0,
              show_default=True, help="seconds to wait for each expected reaction")
@click.pass_context
def run_transcript(ctx: click.Context, files: tuple[str, ...], junit_xml: str | None,
                   timeout: float) -> None:
    """Replay each FILE (a botsvc-transcript/1, from export-chat --format
    transcript) against a new bot with COMMAND started for it: FILE... --
    COMMAND [ARG...]. COMMAND runs in the current directory with
    BOTSVC_BASE_URL and BOTSVC_BOT_TOKEN. The server: BOTSVC_URL with
    BOTSVC_ADMIN_TOKEN (it needs BOTSVC_TEST_TOOLS=1), else one started and
    stopped here. Exit 0 all passed, 1 any failed, 2 a bad FILE, a COMMAND
    that cannot start or a server out of reach."""
    command = ctx.meta.get("bot_command") or []
    if not command:
        raise click.UsageError("the bot's command goes after --: FILE... -- COMMAND [ARG...]")
    transcripts = [(name, _load(name)) for name in files]
    signal.signal(signal.SIGTERM, _stopped)   # a stopped run still stops its bots
    with tempfile.TemporaryDirectory(prefix="botsvc-run-") as scratch, \
            _server(Path(scratch)) as botsvc:
        outcomes = [_run_one(botsvc, name, transcript, command, timeout,
                             Path(scratch) / f"bot-{number}.log")
                    for number, (name, transcript) in enumerate(transcripts, 1)]
    if junit_xml:
        write_junit(junit_xml, outcomes)
    failed = sum(1 for outcome in outcomes if outcome.failure)
    click.echo(f"{len(outcomes) - failed} passed, {failed} failed")
    ctx.exit(1 if failed else 0)


def _stopped(signum, frame) -> None:
    raise SystemExit(128 + signum)


def _load(name: str) -> dict:
    try:
        return load(Path(name).read_text(encoding="utf-8"))
    except OSError as unreadable:
        raise Stop(f"{name}: cannot read it: {unreadable.strerror}") from None
    except (NotATranscript, UnicodeDecodeError) as bad:
        raise Stop(f"{name} is not a botsvc-transcript/1 file: {bad}") from None


@contextlib.contextmanager
def _server(scratch: Path):
    """The Botsvc to run on: BOTSVC_URL's, checked to answer, or a fresh one."""
    try:
        settings = Settings.from_env(secret=False)
    except SettingError as refused:
        raise Stop(str(refused).removeprefix("botsvc: ")) from None
    if settings.url:
        if not settings.admin_token:
            raise Stop(f"BOTSVC_URL is {settings.url} but BOTSVC_ADMIN_TOKEN is not set")
        say(f"using the server at {settings.url}")
        botsvc = Botsvc(settings.url, settings.admin_token)
        _check_reachable(botsvc)
        yield botsvc
        return
    server = LocalServer(scratch / "server", QUICK_ENV)
    try:
        server.start()
    except RuntimeError as failed:
        raise Stop(f"cannot start a server: {str(failed).splitlines()[0]}") from None
    try:
        say(f"started a server at {server.base_url}")
        yield Botsvc(server.base_url, server.admin_token)
    finally:
        server.stop(quick=True)


def _check_reachable(botsvc: Botsvc) -> None:
    try:
        botsvc.operator.call("getClock")
    except requests.RequestException as error:
        raise Stop(_unreachable(botsvc, error)) from None
    except BotsvcError as refused:
        raise Stop(f"the server at {botsvc.base_url} refused the operator API:"
                   f" {refused.error_code} ({refused.http_status})") from None


def _unreachable(botsvc, error) -> str:
    return f"cannot reach the server at {botsvc.base_url}: {unreachable_reason(error)}"


def _run_one(botsvc, name: str, transcript: dict, command: list[str], timeout: float,
             output_path: Path) -> Outcome:
    """One transcript: a new bot, COMMAND for it, the replay, COMMAND stopped."""
    began = time.monotonic()
    try:
        bot = botsvc.new_bot()
    except requests.RequestException as error:
        raise Stop(_unreachable(botsvc, error)) from None
    process = BotProcess(command, base_url=bot.base_url, token=bot.token,
                         output_path=output_path, cwd=os.getcwd())
    try:
        process.start()
    except BotCannotStart as refused:
        raise Stop(str(refused)) from None
    bot.process_check, failure = process.check, None
    try:
        replay(botsvc, bot, transcript, timeout=timeout)
    except AssertionError as failed:
        failure = str(failed)
    except requests.RequestException as error:
        raise Stop(_unreachable(botsvc, error)) from None
    finally:
        process.stop()
    outcome = Outcome(name, failure, process.output(), process.output_tail(),
                      time.monotonic() - began)
    _report(outcome)
    return outcome


def _report(outcome: Outcome) -> None:
    if outcome.failure is None:
        click.echo(f"PASS {outcome.file}")
        return
    first, _, rest = outcome.failure.partition("\n")
    click.echo(f"FAIL {outcome.file}: {first}")
    if rest:
        click.echo(rest)
    if "its last lines:" not in outcome.failure:   # an early exit already shows them
        click.echo(f"  the bot's last lines:\n{outcome.tail}")
