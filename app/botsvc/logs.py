"""Request ids and the log.

Every response of every route carries ``X-Request-Id``: the client's own when
it matches ``^[A-Za-z0-9._:-]{1,128}$``, else a new random one. Each request
writes one access line (``botsvc.access``; BOTSVC_ACCESS_LOG=0 turns it off)
and every log line written while a request runs carries the request's id.
``BOTSVC_LOG_FORMAT=json`` writes one JSON object per line (python-json-logger)
with time, level, request_id, bot_id, method, status, error_code, duration_ms
and message.

What is never logged: a token (headers are not logged at all), a query string
(signed download links are bearer capabilities: the access line has the path
only) or a body.
"""
from __future__ import annotations

import logging
import os
import re
import sys
import time

from flask import Flask, Response, g, has_request_context, request
from pythonjsonlogger.json import JsonFormatter

from botsvc.contract import KEY
from botsvc.envelope import error_code_of

HEADER = "X-Request-Id"
_HEADER_KEY = "HTTP_X_REQUEST_ID"   # the header as WSGI names it
_METHOD_NAME = re.compile(r"^[A-Za-z][A-Za-z0-9]{0,63}\Z")
CONTEXT_FIELDS = ("request_id", "bot_id", "method", "status", "error_code", "duration_ms")
TEXT_FORMAT = "%(asctime)s %(process)d %(levelname)s %(name)s [%(request_tag)s] %(message)s"
# The record's attributes in the order of the JSON line (renamed: level, logger).
JSON_FIELDS = ("levelname", *CONTEXT_FIELDS, "message", "name", "process")

access_log = logging.getLogger("botsvc.access")


def new_request_id() -> str:
    return os.urandom(16).hex()


def request_id_for(presented: str | None) -> str:
    return presented if presented and KEY.match(presented) else new_request_id()


def install(app: Flask, *, access_lines: bool) -> None:
    """Give every request of ``app`` its id, and every response the header."""
    def begin() -> None:
        g.request_id = request_id_for(request.environ.get(_HEADER_KEY))
        g.request_started = time.perf_counter()

    def finish(response: Response) -> Response:
        context = g._get_current_object()
        rid = request_id(context)
        response.headers[HEADER] = rid
        if access_lines:
            level = getattr(context, "access_line_level", logging.INFO)
            if access_log.isEnabledFor(level):
                write_access_line(response, rid, request._get_current_object(), context, level)
        return response

    app.before_request(begin)
    app.after_request(finish)


def quiet_access_line() -> None:
    """This request's access line at DEBUG: for the requests a page repeats
    every second (the sandbox's polls), which would drown the log at INFO."""
    g.access_line_level = logging.DEBUG


def write_access_line(response: Response, rid: str, req, context, level: int) -> None:
    """The request's one access line. The record is made here with its
    request fields set, rather than through ``Logger.info``: that walks the
    stack for the caller's file and line (which no format shows) and runs
    the context filter's lookups again, about a tenth of a call's time.
    ``req`` and ``context`` are Flask's request and ``g`` themselves (each use
    of their proxies looks them up again)."""
    status = response.status_code
    context.response_status = status
    context.response_error_code = code = error_code_of(response)
    started = getattr(context, "request_started", None)
    duration = 0.0 if started is None else round((time.perf_counter() - started) * 1000, 2)
    context.response_duration_ms = duration
    record = access_log.makeRecord(
        access_log.name, level, __file__, 0, "%s %s %d%s %.2f ms",
        (req.method, req.path, status, f" {code}" if code else "", duration), None,
        func="write_access_line")
    record.request_id, record.bot_id = rid, getattr(context, "bot_id", None)
    record.method = _method_of(req.view_args)
    record.status, record.error_code, record.duration_ms = status, code, duration
    record.botsvc_context = True
    access_log.handle(record)


def _method_of(view_args: dict | None) -> str | None:
    name = (view_args or {}).get("name")
    return name if isinstance(name, str) and _METHOD_NAME.match(name) else None


def request_id(context_g=None) -> str:
    """This request's id (made now if the request began before ``install``
    ran its hook, as a routing failure of a blueprint hook may).
    ``context_g``: ``g`` itself, for a caller that resolved it already."""
    context_g = g if context_g is None else context_g
    if "request_id" not in context_g:
        context_g.request_id = request_id_for(request.environ.get(_HEADER_KEY))
    return context_g.request_id


def elapsed_seconds(context_g=None) -> float:
    started = (g if context_g is None else context_g).get("request_started")
    return 0.0 if started is None else time.perf_counter() - started


class RequestContext(logging.Filter):
    """Adds the request's fields to every record (None outside a request)."""

    def filter(self, record: logging.LogRecord) -> bool:
        if record.__dict__.pop("botsvc_context", False):
            return True   # the access line: its fields are set (the mark goes: no field)
        for name in CONTEXT_FIELDS:
            setattr(record, name, None)
        if has_request_context():
            record.request_id = request_id()
            record.bot_id = g.get("bot_id")
            record.method = _method_of(request.view_args)
            record.status = g.get("response_status")
            record.error_code = g.get("response_error_code")
            record.duration_ms = g.get("response_duration_ms")
        return True


class JsonLines(JsonFormatter):
    """One JSON object per line, with the fields in a fixed order."""

    def __init__(self):
        super().__init__(list(JSON_FIELDS), rename_fields={"levelname": "level", "name": "logger"},
                         timestamp="time")

    def add_fields(self, log_data, record, message_dict) -> None:
        super().add_fields(log_data, record, message_dict)
        fields = dict(log_data)
        log_data.clear()
        log_data["time"] = fields.pop("time")   # first, as people read a log line
        log_data.update(fields)


class TextLines(logging.Formatter):
    """The text line: the request id in brackets (``-`` outside a request)."""

    def __init__(self):
        super().__init__(TEXT_FORMAT)
        self._second: tuple[int, str] = (-1, "")

    def format(self, record: logging.LogRecord) -> str:
        record.request_tag = getattr(record, "request_id", None) or "-"
        return super().format(record)

    def formatTime(self, record: logging.LogRecord, datefmt: str | None = None) -> str:
        """logging's own ``asctime``, its date part made once a second (it
        was a twentieth of the access line's cost)."""
        if datefmt:
            return super().formatTime(record, datefmt)
        second = int(record.created)
        cached_second, stamp = self._second
        if cached_second != second:
            stamp = time.strftime(self.default_time_format, self.converter(record.created))
            self._second = (second, stamp)
        return self.default_msec_format % (stamp, record.msecs)


def formatter(log_format: str) -> logging.Formatter:
    return JsonLines() if log_format == "json" else TextLines()


def configure(log_format: str, level: int = logging.INFO) -> None:
    """The process's log: one handler on stderr, in the chosen format, with
    the request context. APScheduler logs its start-up and two INFO lines per
    job run: with a tick a second they would drown the service's own log."""
    handler = logging.StreamHandler(sys.stderr)
    handler.setFormatter(formatter(log_format))
    handler.addFilter(RequestContext())
    root = logging.getLogger()
    for old in list(root.handlers):
        root.removeHandler(old)
    root.addHandler(handler)
    root.setLevel(level)
    logging.getLogger("apscheduler").setLevel(logging.WARNING)


def gunicorn_logconfig(log_format: str) -> dict | None:
    """gunicorn's own lines (start, workers booting) in the same format, for
    ``logconfig_dict``; None keeps gunicorn's defaults (text)."""
    if log_format != "json":
        return None
    return {
        "version": 1, "disable_existing_loggers": False,
        "formatters": {"json": {"()": "botsvc.logs.JsonLines"}},
        "filters": {"context": {"()": "botsvc.logs.RequestContext"}},
        "handlers": {"error_console": {"class": "logging.StreamHandler", "formatter": "json",
                                       "filters": ["context"], "stream": "ext://sys.stderr"}},
        "root": {"level": "INFO", "handlers": []},
        "loggers": {"gunicorn.error": {"level": "INFO", "handlers": ["error_console"],
                                       "propagate": False, "qualname": "gunicorn.error"},
                    # The application writes the access line itself (with the id).
                    "gunicorn.access": {"level": "CRITICAL", "handlers": [],
                                        "propagate": False, "qualname": "gunicorn.access"}},
    }
