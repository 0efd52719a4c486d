"""What every ``botsvc`` command shares: the group, one-line failures, the
migrations run by the commands that may create or move a database, and the
check that an operator command acts on an installation that exists."""
from __future__ import annotations

import importlib
import json
import os
import sys

import click

from botsvc import disk
from botsvc.config import Settings
from botsvc.errors import ApiError
from botsvc.migrations import DatabaseNewerThanCode, migrate

# The modules that register commands on ``main``, and the one a command
# lives in where starting it should load nothing else: ``serve`` execs
# gunicorn at once, and importing every command (the operator commands load
# the whole app) cost a server start about a second it then threw away.
COMMAND_MODULES = ("installation", "operator", "serve", "transcripts")
# The installation's own tasks load no app either: scripts/backup (the backup
# timer) ran ``botsvc backup`` with the whole API imported, most of its start.
COMMAND_HOMES = {"serve": "serve", "check-media": "serve", "run-transcript": "transcripts",
                 **dict.fromkeys(("migrate", "backup", "restore", "restore-replica", "openapi"),
                                 "installation")}


def load_commands(*modules: str) -> None:
    for module in modules or COMMAND_MODULES:
        importlib.import_module(f"botsvc.cli.{module}")


class Commands(click.Group):
    """The command group, its modules imported when a command is looked up."""

    def get_command(self, ctx: click.Context, name: str):
        if name not in self.commands and name in COMMAND_HOMES:
            load_commands(COMMAND_HOMES[name])
        if name not in self.commands:   # any other name: every module
            load_commands()
        return super().get_command(ctx, name)

    def list_commands(self, ctx: click.Context) -> list[str]:
        load_commands()
        return super().list_commands(ctx)


    def format_commands(self, ctx: click.Context, formatter: click.HelpFormatter) -> None:
        """Each command's whole first sentence (click cuts it to the
        terminal's width with "..."): wrapped, never cut."""
        rows = [(name, command.get_short_help_str(limit=1000))
                for name in self.list_commands(ctx)
                if (command := self.get_command(ctx, name)) is not None and not command.hidden]
        if rows:
            with formatter.section("Commands"):
                formatter.write_dl(rows)


@click.group(cls=Commands, help=(
    "botsvc: operate a bot messaging service installation.\n\n"
    "A command acts on the installation in BOTSVC_DATA_DIR (default ./data) or, when"
    " BOTSVC_URL and BOTSVC_ADMIN_TOKEN are set, on the running server at BOTSVC_URL"
    " through its operator API. Every BOTSVC_* setting is read from the environment"
    " (the README's Settings)."))
@click.version_option(package_name="botsvc", prog_name="botsvc",
                      message="%(prog)s %(version)s")
def main() -> None:
    pass


def say(text: str) -> None:
    click.echo(f"botsvc: {text}", err=True)


def fail(error: ApiError) -> None:
    """An API failure as the API answers it (its envelope, on stderr), exit 1."""
    click.echo(json.dumps(error.body(), ensure_ascii=False), err=True)
    sys.exit(1)


def migrate_or_stop(db_path: str) -> int:
    """Migrate, or stop with one line (no traceback) on a database that a
    newer botsvc migrated, or on a disk too full to apply a migration."""
    try:
        return migrate(db_path)
    except DatabaseNewerThanCode as refused:
        raise SystemExit(f"botsvc: {refused}") from None
    except Exception as exc:
        if disk.is_disk_full(exc, os.path.dirname(db_path)):
            raise SystemExit(f"botsvc: cannot open or migrate {db_path}: the disk is full;"
                             " free some space and start again") from None
        raise


def migrate_at_start(settings: Settings) -> int:
    """Room to open the database on a full disk (with a warning), then migrate."""
    free, _ = disk.make_room_to_start(settings.data_dir)
    version = migrate_or_stop(settings.db_path)
    if free is not None:
        say(disk.full_disk_warning(free))
    return version


def existing_installation(settings: Settings) -> None:
    """Stop with one line unless the data dir holds a database: only serve,
    migrate and restore make one. A command run from the wrong directory
    would otherwise make a new, empty installation there and act on it
    (a bot whose token the running server has never seen)."""
    if not os.path.isfile(settings.db_path):
        raise SystemExit(
            f"botsvc: no installation in {settings.data_dir} (no {os.path.basename(settings.db_path)}"
            " there): set BOTSVC_DATA_DIR to the server's data dir, or BOTSVC_URL and"
            " BOTSVC_ADMIN_TOKEN to act on a running server; 'botsvc migrate' makes a new one")
