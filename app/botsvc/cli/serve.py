"""``botsvc serve`` and ``botsvc check-media``: the address, the migrations
and the media tools checked, then gunicorn takes this process's place."""
from __future__ import annotations

import contextlib
import errno
import json
import os
import socket
import sys
import tempfile
from dataclasses import replace

import click

from botsvc import disk, replication
from botsvc.cli.base import fail, main, migrate_at_start, say
from botsvc.config import Settings
from botsvc.errors import ApiError
from botsvc.media import (
    OFFLINE_DATABASE_DIR,
    MediaConfig,
    build_test_signature_db,
    check_dependencies,
    needs_offline_database,
    probe_tools,
)
from botsvc.media.deps import OK as MEDIA_OK
from botsvc.media.signatures import SYSTEM_DATABASE

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


@main.command("check-media", help="Check that ffmpeg, ffprobe, the PDF parser, libmagic, "
              "prlimit and ClamAV work as uploads will use them.")
def check_media() -> None:
    settings = Settings.from_env(secret=False)
    with contextlib.ExitStack() as stack:
        if not os.path.isdir(settings.data_dir):
            # Run anywhere, it checks the tools, and makes no data dir there:
            # its sample files go to a temporary directory instead.
            settings = replace(settings, data_dir=stack.enter_context(
                tempfile.TemporaryDirectory(prefix="botsvc-check-media-")))
        works, note = media_tools(settings)
    if isinstance(note, ApiError):
        fail(note)
    click.echo(note or "media tools and scanner: OK", err=not works)
    if not works:
        sys.exit(1)


def media_tools(settings: Settings) -> tuple[bool, str | ApiError | None]:
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
    state = probe_tools(media)
    full = (f"the disk under the data dir is full ({disk.free_bytes(settings.data_dir)} "
            "bytes free): uploads answer 503 STORAGE_FULL until space is freed")
    if state != MEDIA_OK:
        return False, f"botsvc: media tools: {state}; and {full}"
    return True, f"media tools and scanner: OK as /readyz checks them (no sample scan: {full})"


def check_address_free(bind: str) -> None:
    """Stop with one line when BOTSVC_BIND cannot be listened on (above all,
    a port another server holds), before anything migrates or says it
    serves: gunicorn would retry for seconds, then stop with a traceback.
    The probe binds as gunicorn does (SO_REUSEADDR: a port whose old
    connections linger is free to it) and lets go at once."""
    if bind.startswith("unix:"):
        return   # gunicorn replaces a stale socket file itself
    host, port = bind.rsplit(":", 1)
    host = host.strip("[]")
    try:
        addresses = socket.getaddrinfo(host or None, int(port), type=socket.SOCK_STREAM,
                                       flags=socket.AI_PASSIVE)
        family, kind, proto, _, address = addresses[0]
        with socket.socket(family, kind, proto) as probe:
            probe.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)
            probe.bind(address)
    except OSError as error:   # socket.gaierror included: a host that does not resolve
        why = ("the address is already in use (another botsvc, or another program, listens"
               " there): stop it, or set BOTSVC_BIND to a free port"
               if error.errno == errno.EADDRINUSE else error.strerror or str(error))
        raise SystemExit(f"botsvc: cannot serve on {bind}: {why}") from None


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
        say("WARNING: could not write the test signature database (is the disk full?)")
    env["BOTSVC_CLAMAV_DB"] = path
    click.echo(NO_SIGNATURES_BANNER.format(system=SYSTEM_DATABASE, path=path), err=True)
    return replace(settings, clamav_db=path)


@main.command("serve", help="Serve: apply migrations, check the media tools, then run gunicorn "
              "(BOTSVC_BIND, BOTSVC_WORKERS workers of BOTSVC_THREADS threads, each with its "
              "background jobs). Settings come from the environment.")
def serve() -> None:
    env = dict(os.environ)
    settings = Settings.from_env(env, secret=False)
    check_address_free(settings.bind)
    settings = _offline_signatures(settings, env)
    migrate_at_start(settings)
    # BOTSVC_MEDIA_CHECK=lazy (a test server): uploads find a broken tool.
    works, note = (media_tools(settings) if settings.media_check == "start" else
                   (True, "botsvc: media tools not checked at start (BOTSVC_MEDIA_CHECK=lazy)"))
    if isinstance(note, ApiError):
        note = json.dumps(note.body(), ensure_ascii=False)
    if note:
        click.echo(note, err=True)
    if not works:
        click.echo(MEDIA_BANNER, err=True)
    say(f"serving on http://{settings.bind} (data in {settings.data_dir})")
    argv = [sys.executable, "-m", "gunicorn", "-c", GUNICORN_CONFIG, WORKER_APP]
    if settings.replica is not None:
        # Litestream takes this process's place, gunicorn its child
        # (app/botsvc/replication.py says why and what it passes on).
        try:
            argv = replication.supervised(settings, argv)
        except replication.ReplicationError as error:
            raise SystemExit(f"botsvc: {error}") from None
        say(f"replicating the database to {replication.shown(settings.replica)} with Litestream")
    # gunicorn (or Litestream) takes this process's place (and pid): a
    # service manager's signals reach its master directly.
    os.execve(argv[0], argv, env)
