"""The ``botsvc`` command: the operator API from a shell, and the
installation's own tasks.

Each operator command is a client of the method catalogue: it sends its
arguments, as text like a form, through the same ``execute`` as
``/manage/v1/<method>`` (the method's own schema, then its handler), so it
can do nothing the API would refuse and fails with the API's error_code and
field. Settings come from the environment, as for the server
(BOTSVC_DATA_DIR above all).
"""
from __future__ import annotations

import contextlib
import hashlib
import json
import os
import sqlite3
import sys
import tempfile
from dataclasses import dataclass, field, replace

import click
from flask import Flask

from botsvc import disk, owner
from botsvc.backup import BackupError, backup, restore
from botsvc.catalogue.body import RequestBody
from botsvc.catalogue.validation import FilePart, UploadedFile
from botsvc.config import Settings
from botsvc.db import get_db
from botsvc.errors import ApiError
from botsvc.factory import create_app
from botsvc.manage.dispatch import OPERATOR_METHODS, execute
from botsvc.media import (
    OFFLINE_DATABASE_DIR,
    MediaConfig,
    build_test_signature_db,
    check_dependencies,
    needs_offline_database,
)
from botsvc.media.signatures import SYSTEM_DATABASE
from botsvc.migrations import DatabaseNewerThanCode, migrate
from botsvc.openapi import document_text
from botsvc.routes import health


def _fail(error: ApiError) -> None:
    click.echo(json.dumps(error.body(), ensure_ascii=False), err=True)
    sys.exit(1)


def _migrate(db_path: str) -> int:
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


@click.group(help="botsvc: operate a bot messaging service installation.")
def main() -> None:
    pass


def _migrate_at_start(settings: Settings) -> int:
    """Room to open the database on a full disk (with a warning), then migrate."""
    free, _ = disk.make_room_to_start(settings.data_dir)
    version = _migrate(settings.db_path)
    if free is not None:
        click.echo(f"botsvc: {disk.full_disk_warning(free)}", err=True)
    return version


@main.command(help="Apply pending database migrations.")
def migrate_db() -> None:
    settings = Settings.from_env()
    version = _migrate_at_start(settings)
    click.echo(f"schema version {version} at {settings.db_path}")


main.add_command(migrate_db, "migrate")


def _say(text: str) -> None:
    click.echo(f"botsvc: {text}", err=True)


@main.command("backup", help="Write a consistent copy of this installation (database, stored "
              "files, signing key) to the new directory DEST, while it serves; every file "
              "is checked (integrity_check, SHA-256).")
@click.argument("dest", type=click.Path(file_okay=False))
def backup_command(dest: str) -> None:

    settings = Settings.from_env(secret=False)
    if not os.path.isfile(settings.db_path):   # before the key is read (or made)
        raise SystemExit(f"botsvc: backup failed: no installation at {settings.data_dir}")
    try:
        summary = backup(Settings.from_env(), dest, _say)
    except (BackupError, sqlite3.Error, OSError) as error:
        raise SystemExit(f"botsvc: backup failed: {error}") from None
    click.echo(summary.line("backup of " + settings.data_dir + " to", os.path.abspath(dest)))


@main.command("restore", help="Fill the empty data dir (BOTSVC_DATA_DIR) from the backup SRC, "
              "check it, and apply any newer migrations. Refuses a data dir that is not empty.")
@click.argument("src", type=click.Path(exists=True, file_okay=False))
def restore_command(src: str) -> None:

    settings = Settings.from_env(secret=False)   # the key comes from the backup
    try:
        summary = restore(settings, src, _say)
    except (BackupError, sqlite3.Error, OSError) as error:
        raise SystemExit(f"botsvc: restore failed: {error}") from None
    schema = _migrate(settings.db_path)
    if Settings.from_env().secret_key != _read(settings.data_dir, "secret_key"):
        _say("warning: BOTSVC_SECRET_KEY differs from the backup's signing key; signed"
             " download URLs made before the backup will not verify")
    click.echo(summary.line("restored " + os.path.abspath(src) + " into", settings.data_dir)
               + f"; schema now {schema}")


def _read(directory: str, name: str) -> bytes:
    with open(os.path.join(directory, name), "rb") as fh:
        return fh.read().strip()


@main.command("check-media", help="Check that ffmpeg, ffprobe, the PDF parser, libmagic, "
              "prlimit and ClamAV work as uploads will use them.")
def check_media():
    works, note = _media_tools(Settings.from_env())
    if isinstance(note, ApiError):
        _fail(note)
    click.echo(note or "media tools and scanner: OK", err=not works)
    if not works:
        sys.exit(1)


def _media_tools(settings: Settings) -> tuple[bool, str | ApiError | None]:
    """Whether the media tools and the scanner work, and what to say besides
    (None: nothing): their failure, or one line. With no room for the sample
    files the full check writes and scans (a full disk), they are checked as
    /readyz checks them (they start; the scanner has signatures), and the line
    says the disk is full: a traceback, or "the tools do not work", would be
    untrue."""
    media = MediaConfig.from_settings(settings)
    try:
        check_dependencies(media)
    except ApiError as error:
        return False, error
    except OSError as error:
        if not disk.is_full_oserror(error):
            raise
    else:
        return True, None
    state = health.check_media(settings, media)
    full = (f"the disk under the data dir is full ({disk.free_bytes(settings.data_dir)} "
            "bytes free): uploads answer 503 STORAGE_FULL until space is freed")
    if state != health.OK:
        return False, f"botsvc: media tools: {state}; and {full}"
    return True, f"media tools and scanner: OK as /readyz checks them (no sample scan: {full})"


# -- serving ----------------------------------------------------------------------

# gunicorn's settings and each worker's app, both found in the installed
# package (no path into a checkout): ``python:`` loads a config module by name.
GUNICORN_CONFIG = "python:botsvc.gunicorn_conf"
WORKER_APP = "botsvc.factory:worker_app()"
NO_SIGNATURES_BANNER = """\
########################################################################
## WARNING: NO REAL VIRUS SIGNATURES.
## No ClamAV database in {system}, so uploads are scanned with a
## minimal test database ({path})
## that detects ONLY the EICAR test file and protects against nothing real.
## Run 'freshclam' (as root) to install the official signatures and
## restart, or point BOTSVC_CLAMAV_DB (or BOTSVC_CLAMD_SOCKET) elsewhere.
########################################################################"""
MEDIA_BANNER = """\
########################################################################
## WARNING: the media tools or the virus scanner do not work (see above).
## Uploads and direct media sends fail with 503 DEPENDENCY_UNAVAILABLE
## until this is fixed; everything else works.
########################################################################"""


def _offline_signatures(settings: Settings, env: dict[str, str]) -> Settings:
    """Without clamd, a named database or the system's signatures (an offline
    machine where freshclam never ran), scan with the test database, written
    into the data dir, and say so loudly. A disk too full to write it leaves
    the scanner failing closed (uploads 503), not the start failing."""
    if not needs_offline_database(settings.clamd_socket, settings.clamav_db):
        return settings
    path = os.path.join(settings.data_dir, OFFLINE_DATABASE_DIR)
    try:
        build_test_signature_db(path)
    except OSError:
        _say("WARNING: could not write the test signature database (is the disk full?)")
    env["BOTSVC_CLAMAV_DB"] = path
    click.echo(NO_SIGNATURES_BANNER.format(system=SYSTEM_DATABASE, path=path), err=True)
    return replace(settings, clamav_db=path)


@main.command("serve", help="Serve: apply migrations, check the media tools, then run gunicorn "
              "(BOTSVC_BIND, BOTSVC_WORKERS workers of BOTSVC_THREADS threads, each with its "
              "background jobs). Settings come from the environment.")
def serve() -> None:
    env = dict(os.environ)
    settings = _offline_signatures(Settings.from_env(env, secret=False), env)
    _migrate_at_start(settings)
    works, note = _media_tools(settings)
    if isinstance(note, ApiError):
        note = json.dumps(note.body(), ensure_ascii=False)
    if note:
        click.echo(note, err=True)
    if not works:
        click.echo(MEDIA_BANNER, err=True)
    _say(f"serving on http://{settings.bind} (data in {settings.data_dir})")
    argv = [sys.executable, "-m", "gunicorn", "-c", GUNICORN_CONFIG, WORKER_APP]
    # gunicorn takes this process's place (and pid): a service manager's
    # signals reach its master directly.
    os.execve(sys.executable, argv, env)


@main.command("openapi", help="Print the OpenAPI document, as GET /openapi.json serves it.")
def print_openapi():

    click.echo(document_text(Settings.from_env()))


# -- operator commands ------------------------------------------------------------

@dataclass(frozen=True)
class OperatorCommand:
    """A command line for one operator method: its positional arguments and
    options name the method's parameters; the method's schema does the rest."""
    name: str
    method: str
    arguments: tuple[str, ...] = ()
    options: dict[str, str] = field(default_factory=dict)   # --option: parameter
    # A boolean parameter the command sets to true, or to false with --enable.
    switch: str | None = None
    flags: dict[str, str] = field(default_factory=dict)   # --flag: a parameter set to true


OPERATOR_COMMANDS = (
    OperatorCommand("create-bot", "createBot", ("username",),
                    {"--display-name": "display_name", "--description": "description"}),
    OperatorCommand("rotate-token", "rotateToken", ("bot_id",)),
    OperatorCommand("set-bot-disabled", "setBotDisabled", ("bot_id",), switch="disabled"),
    OperatorCommand("set-platform-disabled", "setPlatformDisabled", switch="disabled"),
    OperatorCommand("list-bots", "listBots"),
    OperatorCommand("create-user", "createUser", options={"--display-name": "display_name"}),
    OperatorCommand("user-start", "userStart", ("user_id", "bot_id"),
                    {"--start-parameter": "start_parameter"}),
    OperatorCommand("user-stop", "userStop", ("user_id", "bot_id")),
    OperatorCommand("user-block", "userBlock", ("user_id", "bot_id")),
    OperatorCommand("user-send", "userSendMessage", ("user_id", "bot_id", "text"),
                    {"--reply-to": "reply_to_message_id"}),
    OperatorCommand("user-click", "userClickButton",
                    ("user_id", "bot_id", "message_id", "callback_data")),
    OperatorCommand("user-chat", "userGetChat", ("user_id", "bot_id"),
                    {"--limit": "limit", "--before": "before_message_id"}),
    OperatorCommand("user-send-media", "userSendMedia", ("user_id", "bot_id", "file"),
                    {"--caption": "caption", "--type": "type"}),
    OperatorCommand("bot-calls", "getBotCalls", ("bot_id",),
                    {"--limit": "limit", "--cursor": "cursor", "--method": "method"},
                    flags={"--failures-only": "failures_only"}),
    OperatorCommand("export-chat", "exportChat", ("user_id", "bot_id"),
                    {"--after": "after_message_id", "--format": "format"}),
)


def run_operator_method(app: Flask, name: str, params: dict[str, str],
                        files: dict[str, UploadedFile] | None = None):
    """``/manage/v1/<name>`` without HTTP: the same validation and handler.
    Prints the error and exits 1 on failure."""
    with app.app_context():
        try:
            return execute(OPERATOR_METHODS[name], get_db(),
                           RequestBody(params, files or {}, is_form=True))
        except ApiError as error:
            _fail(error)


@contextlib.contextmanager
def quarantined_copy(quarantine: str, path: str, parameter: str):
    """The operator's file as an upload: a private copy in quarantine (the
    pipeline never reads a file in place), removed afterwards."""
    fd, copy = tempfile.mkstemp(prefix=owner.file_prefix("upload"), dir=quarantine)
    try:
        digest = hashlib.sha256()
        with os.fdopen(fd, "wb") as out, open(path, "rb") as src:
            for chunk in iter(lambda: src.read(1 << 20), b""):
                digest.update(chunk)
                out.write(chunk)
        yield UploadedFile(parameter, copy, os.path.basename(path), None,
                           os.path.getsize(copy), digest.hexdigest())
    finally:
        os.unlink(copy)


def _command(spec: OperatorCommand) -> click.Command:
    method = OPERATOR_METHODS[spec.method]
    schema_fields = method.schema.fields if method.schema is not None else {}
    file_parameters = {name for name in spec.arguments
                       if isinstance(schema_fields.get(name), FilePart)}
    params: list[click.Parameter] = [
        click.Argument([name], type=click.Path(exists=True, dir_okay=False, readable=True)
                       if name in file_parameters else click.UNPROCESSED)
        for name in spec.arguments]
    params += [click.Option([option, parameter]) for option, parameter in spec.options.items()]
    params += [click.Option([option, parameter], is_flag=True, default=None)
               for option, parameter in spec.flags.items()]
    if spec.switch:
        params.append(click.Option(["--enable"], is_flag=True, help="re-enable instead"))

    def callback(**values):
        enable = values.pop("enable", False)
        given = {name: value for name, value in values.items() if value is not None}
        given.update({name: "true" for name in spec.flags.values() if given.pop(name, None)})
        if spec.switch:
            given[spec.switch] = "false" if enable else "true"
        settings = Settings.from_env()
        _migrate(settings.db_path)   # one line, not a traceback, on a newer database
        app = create_app(settings)
        with contextlib.ExitStack() as stack:
            files = {name: stack.enter_context(
                quarantined_copy(app.config["QUARANTINE_DIR"], given.pop(name), name))
                for name in file_parameters}
            result = run_operator_method(app, spec.method, given, files)
        click.echo(json.dumps(result, ensure_ascii=False, indent=2))

    return click.Command(spec.name, params=params, callback=callback, help=method.summary)


for _spec in OPERATOR_COMMANDS:
    main.add_command(_command(_spec))


if __name__ == "__main__":
    main()
