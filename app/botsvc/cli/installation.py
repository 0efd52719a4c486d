"""The installation's own tasks: migrate, backup, restore, restore-replica,
openapi. Of all commands only ``serve``, ``migrate`` and the restores may
create a database."""
from __future__ import annotations

import os
import sqlite3

import click

from botsvc.backup import BackupError, backup, restore, restore_replica
from botsvc.cli.base import main, migrate_at_start, migrate_or_stop, say
from botsvc.config import Settings
from botsvc.replica_url import replica_url
from botsvc.replication import ReplicationError


@main.command("migrate", help="Apply pending database migrations (making the database in "
              "BOTSVC_DATA_DIR if there is none).")
def migrate_db() -> None:
    settings = Settings.from_env()
    version = migrate_at_start(settings)
    click.echo(f"schema version {version} at {settings.db_path}")


@main.command("backup", help="Write a consistent copy of this installation (database, stored "
              "files, signing key) to the new directory DEST, while it serves; every file "
              "is checked (integrity_check, SHA-256).")
@click.argument("dest", type=click.Path(file_okay=False))
def backup_command(dest: str) -> None:
    settings = Settings.from_env(secret=False)
    if not os.path.isfile(settings.db_path):   # before the key is read (or made)
        raise SystemExit(f"botsvc: backup failed: no installation at {settings.data_dir}")
    try:
        summary = backup(Settings.from_env(), dest, say)
    except (BackupError, sqlite3.Error, OSError) as error:
        raise SystemExit(f"botsvc: backup failed: {error}") from None
    click.echo(summary.line("backup of " + settings.data_dir + " to", os.path.abspath(dest)))


@main.command("restore", help="Fill the empty data dir (BOTSVC_DATA_DIR) from the backup SRC, "
              "check it, and apply any newer migrations. Refuses a data dir that is not empty.")
@click.argument("src", type=click.Path(exists=True, file_okay=False))
def restore_command(src: str) -> None:
    settings = Settings.from_env(secret=False)   # the key comes from the backup
    try:
        summary = restore(settings, src, say)
    except (BackupError, sqlite3.Error, OSError) as error:
        raise SystemExit(f"botsvc: restore failed: {error}") from None
    schema = migrate_or_stop(settings.db_path)
    if Settings.from_env().secret_key != _read(settings.data_dir, "secret_key"):
        say("warning: BOTSVC_SECRET_KEY differs from the backup's signing key; signed"
            " download URLs made before the backup will not verify")
    click.echo(summary.line("restored " + os.path.abspath(src) + " into", settings.data_dir)
               + f"; schema now {schema}")


@main.command("restore-replica", help="Restore the database from Litestream's replica "
              "(BOTSVC_REPLICA, or --replica URL) into the empty data dir, check its integrity "
              "and schema, say up to when it reaches, and apply any newer migrations. Copy the "
              "stored files (files/) and the signing key (secret_key) in first.")
@click.option("--replica", "url", help="The replica URL or path (default: BOTSVC_REPLICA).")
def restore_replica_command(url: str | None) -> None:
    settings = Settings.from_env(secret=False)
    try:
        url = settings.replica if url is None else replica_url(url, settings.data_dir)
    except ValueError as problem:
        raise SystemExit(f"botsvc: --replica {problem}") from None
    if url is None:
        raise SystemExit("botsvc: restore-replica needs BOTSVC_REPLICA (or --replica URL)")
    try:
        summary = restore_replica(settings, url, say)
    except (BackupError, ReplicationError, sqlite3.Error, OSError) as error:
        raise SystemExit(f"botsvc: restore failed: {error}") from None
    schema = migrate_or_stop(settings.db_path)
    key_file = os.path.join(settings.data_dir, "secret_key")
    brought = os.path.isfile(key_file)
    Settings.from_env()   # BOTSVC_SECRET_KEY, the key brought along, or a new one
    if not brought and os.path.isfile(key_file):
        say("warning: no signing key came along (secret_key, or BOTSVC_SECRET_KEY): a new one"
            " was made, and signed download URLs given out before the loss will not verify")
    click.echo(summary.line(url, settings.data_dir) + f"; schema now {schema}")


def _read(directory: str, name: str) -> bytes:
    with open(os.path.join(directory, name), "rb") as fh:
        return fh.read().strip()


@main.command("openapi", help="Print the OpenAPI document, as GET /openapi.json serves it.")
def print_openapi() -> None:
    from botsvc.openapi import document_text  # the whole API: only for this command

    # No signing key: the document signs nothing, and printing it must not
    # make a data dir wherever it is run.
    click.echo(document_text(Settings.from_env(secret=False)))
