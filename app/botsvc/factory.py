"""The application factory: ``create_app(settings)`` builds the Flask app of
one process (each gunicorn worker through ``worker_app``; tests call it
directly): the database migrated, the routes registered, and with
``start_worker=True`` this process's background scheduler."""
from __future__ import annotations

import contextlib
import logging
import os

from flask import Flask
from werkzeug.exceptions import HTTPException

from botsvc import (
    api,
    clock,
    disk,
    jobs,
    limits,
    logs,
    maintenance,  # noqa: F401  (registers the clean-up jobs' actions)
    manage,
    media,
    metrics,
    openapi,
    routes,
    sandbox,
    write_guard,
)
from botsvc.api.registry import METHODS
from botsvc.call_log.writer import EXTENSION, CallLogWriter
from botsvc.catalogue.body import BotsvcRequest
from botsvc.config import Settings

# Importing a group of methods registers them, and importing the module that
# owns a job's work registers its action (app/botsvc/jobs/actions.py).
from botsvc.connection import wire
from botsvc.db import connect, release_db
from botsvc.envelope import error_response, http_exception_response, internal_error_response
from botsvc.errors import ApiError
from botsvc.media import MediaConfig
from botsvc.migrations import migrate

log = logging.getLogger(__name__)


def create_app(settings: Settings | None = None, *, start_worker: bool = False) -> Flask:
    settings = settings or Settings.from_env()
    metrics.activate(counting=settings.metrics_enabled)
    metrics.reserve_value_files()
    metrics.count_from_zero(METHODS, limits.BUCKETS, media.TOOLS)
    app = BotsvcFlask(__name__, static_folder=None)   # the blueprints serve their own
    app.request_class = BotsvcRequest
    app.config["SETTINGS"] = settings
    free, released = disk.make_room_to_start(settings.data_dir)
    if released:
        log.warning(disk.full_disk_warning(free))
    app.config["QUARANTINE_DIR"] = _private_dir(settings.data_dir, "quarantine")
    app.config["MEDIA"] = MediaConfig.from_settings(settings)
    migrate(settings.db_path)
    with contextlib.closing(connect(settings.db_path)) as conn:
        clock.refresh(conn)   # the offset survives restarts: start from the stored one

    jobs.run_start_jobs(app, jobs.JOBS)   # what processes that died left behind

    if settings.call_log:
        app.extensions[EXTENSION] = CallLogWriter(settings.db_path)
    for blueprint in (api.bp, manage.bp, openapi.bp, sandbox.bp, *routes.BLUEPRINTS):
        app.register_blueprint(blueprint)
    logs.install(app, access_lines=settings.access_log)
    app.teardown_appcontext(release_db)
    app.register_error_handler(ApiError, error_response)
    app.register_error_handler(HTTPException, http_exception_response)
    app.register_error_handler(wire.ReadDeadlineExceeded, _sent_too_slowly)
    app.register_error_handler(Exception, internal_error_response)
    app.wsgi_app = wire.settling_bodies(app.wsgi_app)

    if free is None:
        disk.keep_reserve(settings.data_dir, settings.min_free_bytes)
    if settings.webhook_allow_private:
        log.warning("BOTSVC_WEBHOOK_ALLOW_PRIVATE=1: webhook URLs may use http, any port and "
                    "private addresses. For local development and CI only.")
    if start_worker and settings.run_scheduler:
        jobs.start_worker(app)
    return app


class BotsvcFlask(Flask):
    """Flask, with its check for coroutines made once per function: Flask asks
    ``inspect`` about every hook and view on every request (seven times a
    /v2 call), and the answer never changes for a function."""

    def __init__(self, *args, **kwargs):
        super().__init__(*args, **kwargs)
        self._synced: dict = {}

    def ensure_sync(self, func):
        synced = self._synced.get(func)
        if synced is None:
            synced = self._synced[func] = super().ensure_sync(func)
        return synced

    # Nothing is written before the body is read (app/botsvc/write_guard.py).
    def full_dispatch_request(self):
        with write_guard.until_body_read(self.config["SETTINGS"].db_path):
            return super().full_dispatch_request()

    def finalize_request(self, rv, from_error_handler=False):
        write_guard.lift()    # answered: it will not be parked (after-request hooks write)
        return super().finalize_request(rv, from_error_handler)


def worker_app() -> Flask:
    """What each gunicorn worker serves (``botsvc serve``; wsgi.py in a
    checkout): the settings from the environment, the log in their format,
    and this worker's own background scheduler."""
    settings = Settings.from_env()
    logs.configure(settings.log_format)
    return create_app(settings, start_worker=True)


def _sent_too_slowly(_exc):
    wire.close_connection()
    return error_response(wire.request_timeout())


def _private_dir(data_dir: str, name: str) -> str:
    path = os.path.join(data_dir, name)
    os.makedirs(path, mode=0o700, exist_ok=True)
    return path
