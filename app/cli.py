"""The ``botsvc`` command: the operator API from a shell.

Each command calls the same domain function as its /manage/v1 method and
prints the result as JSON. Settings come from the environment, as for the
server (BOTSVC_DATA_DIR above all).
"""
from __future__ import annotations

import json
import os
import shutil
import sqlite3
import sys
import tempfile

import click

from app import clock, owner
from app.config import Settings
from app.db import DatabaseNewerThanCode, connect, migrate
from app.domain import bots, chats, media_messages
from app.errors import ApiError
from app.media import MediaConfig, check_dependencies


def _conn() -> sqlite3.Connection:
    settings = Settings.from_env()
    _migrate(settings.db_path)
    conn = connect(settings.db_path)
    clock.refresh(conn)  # dates on the service clock, as the server gives them
    return conn


def _migrate(db_path: str) -> int:
    """Migrate, or stop with one line (no traceback) on a database that a
    newer botsvc migrated."""
    try:
        return migrate(db_path)
    except DatabaseNewerThanCode as refused:
        raise SystemExit(f"botsvc: {refused}") from None


def _run(fn, *args):
    conn = _conn()
    try:
        result = fn(conn, *args)
    except ApiError as error:
        click.echo(json.dumps(error.body(), ensure_ascii=False), err=True)
        sys.exit(1)
    finally:
        conn.close()
    click.echo(json.dumps(True if result is None else result, ensure_ascii=False, indent=2))


@click.group(help="botsvc: operate a bot messaging service installation.")
def main() -> None:
    pass


@main.command(help="Apply pending database migrations.")
def migrate_db() -> None:
    settings = Settings.from_env()
    click.echo(f"schema version {_migrate(settings.db_path)} at {settings.db_path}")


main.add_command(migrate_db, "migrate")


@main.command("create-bot", help="Create a bot and print its token (shown only once).")
@click.argument("username")
@click.option("--display-name")
@click.option("--description")
def create_bot(username, display_name, description):
    def op(conn):
        bot, token = bots.create_bot(conn, username, display_name, description)
        return {"bot": bot, "token": token}
    _run(op)


@main.command("rotate-token", help="Issue a new token; the old one stops working at once.")
@click.argument("bot_id", type=int)
def rotate_token(bot_id):
    _run(lambda conn: {"token": bots.rotate_token(conn, bot_id)})


@main.command("set-bot-disabled", help="Disable (or with --enable, re-enable) a bot.")
@click.argument("bot_id", type=int)
@click.option("--enable", is_flag=True)
def set_bot_disabled(bot_id, enable):
    _run(bots.set_bot_disabled, bot_id, not enable)


@main.command("set-platform-disabled", help="Disable (or with --enable, re-enable) the platform.")
@click.option("--enable", is_flag=True)
def set_platform_disabled(enable):
    _run(bots.set_platform_disabled, not enable)


@main.command("list-bots")
def list_bots():
    _run(bots.list_bots)


@main.command("create-user", help="Create a simulated messenger user.")
@click.option("--display-name")
def create_user(display_name):
    _run(lambda conn: {"user_id": bots.create_user(conn, display_name)})


@main.command("user-start", help="The user presses Start for the bot.")
@click.argument("user_id", type=int)
@click.argument("bot_id", type=int)
@click.option("--start-parameter")
def user_start(user_id, bot_id, start_parameter):
    _run(chats.user_start, bot_id, user_id, start_parameter)


@main.command("user-stop", help="The user sends /stop to the bot.")
@click.argument("user_id", type=int)
@click.argument("bot_id", type=int)
def user_stop(user_id, bot_id):
    _run(chats.user_stop, bot_id, user_id)


@main.command("user-block", help="The user blocks the bot.")
@click.argument("user_id", type=int)
@click.argument("bot_id", type=int)
def user_block(user_id, bot_id):
    _run(chats.user_block, bot_id, user_id)


@main.command("user-send", help="The user sends a text message to the bot.")
@click.argument("user_id", type=int)
@click.argument("bot_id", type=int)
@click.argument("text")
@click.option("--reply-to", type=int)
def user_send(user_id, bot_id, text, reply_to):
    _run(chats.user_send_message, bot_id, user_id, text, reply_to)


@main.command("user-click", help="The user clicks a callback button on a bot's message.")
@click.argument("user_id", type=int)
@click.argument("bot_id", type=int)
@click.argument("message_id", type=int)
@click.argument("callback_data")
def user_click(user_id, bot_id, message_id, callback_data):
    _run(chats.user_click_button, bot_id, user_id, message_id, callback_data)


@main.command("user-send-media", help="The user sends a file to the bot (photo, video, "
              "audio, document...): it goes through the upload pipeline like a bot's upload.")
@click.argument("user_id", type=int)
@click.argument("bot_id", type=int)
@click.argument("path", type=click.Path(exists=True, dir_okay=False, readable=True))
@click.option("--caption")
@click.option("--type", "type_", type=click.Choice(media_messages.MEDIA_TYPES),
              help="message type (default: from the file's kind; e.g. voice for audio)")
def user_send_media(user_id, bot_id, path, caption, type_):
    settings = Settings.from_env()
    quarantine = os.path.join(settings.data_dir, "quarantine")
    os.makedirs(quarantine, mode=0o700, exist_ok=True)
    # The pipeline reads a private copy, never the operator's file in place.
    fd, copy = tempfile.mkstemp(prefix=owner.file_prefix("upload"), dir=quarantine)
    try:
        with os.fdopen(fd, "wb") as out, open(path, "rb") as src:
            shutil.copyfileobj(src, out, 1024 * 1024)
        _run(lambda conn: media_messages.user_send_media_file(
            conn, MediaConfig.from_env(settings.data_dir), settings.data_dir,
            settings.storage_quota_bytes, bot_id, user_id, copy, os.path.basename(path), None,
            caption=caption, type=type_))
    finally:
        os.unlink(copy)


@main.command("check-media", help="Check that ffmpeg, ffprobe, the PDF parser, libmagic, "
              "prlimit and ClamAV work as uploads will use them.")
def check_media():
    settings = Settings.from_env()
    try:
        check_dependencies(MediaConfig.from_env(settings.data_dir))
    except ApiError as error:
        click.echo(json.dumps(error.body(), ensure_ascii=False), err=True)
        sys.exit(1)
    click.echo("media tools and scanner: OK")


@main.command("user-chat", help="Show the chat as the user sees it.")
@click.argument("user_id", type=int)
@click.argument("bot_id", type=int)
def user_chat(user_id, bot_id):
    _run(chats.user_view, bot_id, user_id)


if __name__ == "__main__":
    main()
