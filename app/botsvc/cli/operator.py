"""One command per operator method. Each is a client of the method catalogue:
it sends its arguments, as text like a form, to the method, which reads them
with its own schema, so a command can do nothing the API would refuse and
fails with the API's error_code and field.

Where it acts is said on stderr before anything else: on the data dir
(BOTSVC_DATA_DIR, which must hold a database: a command never makes one),
through the same ``execute`` as ``/manage/v1/<method>``; or, with BOTSVC_URL
(or ``--url``) and BOTSVC_ADMIN_TOKEN, on that running server, through
``/manage/v1/<method>`` itself.
"""
from __future__ import annotations

import contextlib
import hashlib
import json
import os
import tempfile
from dataclasses import dataclass, field, replace

import click
from flask import Flask
from marshmallow import validate

from botsvc import owner
from botsvc.catalogue.body import RequestBody
from botsvc.catalogue.validation import FilePart, UploadedFile
from botsvc.cli.base import existing_installation, fail, main, migrate_or_stop, say
from botsvc.cli.remote import call_server
from botsvc.config import Settings, http_url
from botsvc.db import get_db
from botsvc.errors import ApiError
from botsvc.factory import create_app
from botsvc.manage.dispatch import OPERATOR_METHODS, execute


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
    # The result is a file ``{file_name, content}``: written where --output says.
    writes_file: bool = False


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
                    {"--limit": "limit", "--cursor": "cursor", "--method": "method",
                     "--after-call-id": "after_call_id", "--chat-id": "chat_id",
                     "--since": "since", "--until": "until", "--search": "search"},
                    flags={"--failures-only": "failures_only", "--detail": "detail"}),
    OperatorCommand("export-chat", "exportChat", ("user_id", "bot_id"),
                    {"--after": "after_message_id", "--format": "format"}, writes_file=True),
)
OUTPUT_HELP = ("where to write the file: a path, or - for stdout; default: its suggested name"
               " (file_name) in the current directory, replaced if it is there")
URL_HELP = ("act on the botsvc server at this address through its operator API (with "
            "BOTSVC_ADMIN_TOKEN) instead of on BOTSVC_DATA_DIR; default: BOTSVC_URL")


def run_operator_method(app: Flask, name: str, params: dict[str, str],
                        files: dict[str, UploadedFile] | None = None):
    """``/manage/v1/<name>`` without HTTP: the same validation and handler.
    Prints the error and exits 1 on failure."""
    with app.app_context():
        try:
            return execute(OPERATOR_METHODS[name], get_db(),
                           RequestBody(params, files or {}, is_form=True))
        except ApiError as error:
            fail(error)


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


def _settings(url: str | None) -> Settings:
    """The settings, with ``--url`` (checked as BOTSVC_URL is) over BOTSVC_URL."""
    settings = Settings.from_env(secret=False)
    return settings if url is None else replace(settings, url=http_url("--url", url))


def _on_data_dir(settings: Settings, method: str, given: dict[str, str],
                 file_parameters: set[str]):
    existing_installation(settings)
    migrate_or_stop(settings.db_path)   # one line, not a traceback, on a newer database
    say(f"using the data dir {settings.data_dir}")
    app = create_app(Settings.from_env())
    with contextlib.ExitStack() as stack:
        files = {name: stack.enter_context(
            quarantined_copy(app.config["QUARANTINE_DIR"], given.pop(name), name))
            for name in file_parameters}
        return run_operator_method(app, method, given, files)


def _option_help(schema_field) -> str | None:
    """An option's help: its parameter's description in the catalogue, and
    its choices where the schema has a closed set (the method still checks
    the value, and refuses another as the API does)."""
    if schema_field is None:
        return None
    text = schema_field.metadata.get("description")
    choices = [c for v in schema_field.validators if isinstance(v, validate.OneOf)
               for c in v.choices]
    if choices:
        text = f"one of {', '.join(choices)}" + (f" ({text})" if text else "")
    return text


def _write_file(result: dict, output: str | None) -> None:
    """A ``{file_name, content}`` result as its file: to stdout with ``-``,
    else to ``output`` or its suggested name (the name alone: no folder of
    the server's choosing)."""
    if output == "-":
        click.echo(result["content"], nl=False)
        return
    path = output or os.path.basename(result["file_name"]) or "exported"
    with open(path, "w", encoding="utf-8", newline="") as f:
        f.write(result["content"])
    say(f"wrote {path}")


def _command(spec: OperatorCommand) -> click.Command:
    method = OPERATOR_METHODS[spec.method]
    schema_fields = method.schema.fields if method.schema is not None else {}
    file_parameters = {name for name in spec.arguments
                       if isinstance(schema_fields.get(name), FilePart)}
    params: list[click.Parameter] = [
        click.Argument([name], type=click.Path(exists=True, dir_okay=False, readable=True)
                       if name in file_parameters else click.UNPROCESSED)
        for name in spec.arguments]
    params += [click.Option([option, parameter], help=_option_help(schema_fields.get(parameter)))
               for option, parameter in spec.options.items()]
    if spec.writes_file:
        params.append(click.Option(["--output", "-o", "output"], metavar="PATH",
                                   help=OUTPUT_HELP))
    params += [click.Option([option, parameter], is_flag=True, default=None)
               for option, parameter in spec.flags.items()]
    if spec.switch:
        params.append(click.Option(["--enable"], is_flag=True, help="re-enable instead"))
    params.append(click.Option(["--url", "botsvc_url"], metavar="URL", help=URL_HELP))

    def callback(botsvc_url: str | None, **values):
        enable = values.pop("enable", False)
        output = values.pop("output", None)
        given = {name: value for name, value in values.items() if value is not None}
        given.update({name: "true" for name in spec.flags.values() if given.pop(name, None)})
        if spec.switch:
            given[spec.switch] = "false" if enable else "true"
        settings = _settings(botsvc_url)
        if settings.url is not None:
            result = call_server(settings, spec.method, given, file_parameters)
        else:
            result = _on_data_dir(settings, spec.method, given, file_parameters)
        if spec.writes_file:
            _write_file(result, output)
        else:
            click.echo(json.dumps(result, ensure_ascii=False, indent=2))

    return click.Command(spec.name, params=params, callback=callback, help=method.summary)


for _spec in OPERATOR_COMMANDS:
    main.add_command(_command(_spec))
