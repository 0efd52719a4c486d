"""Prometheus metrics (DECISIONS §8): the families, the small functions the
choke points call to count, and ``GET /metrics``.

Under gunicorn every worker counts into its own memory-mapped files in
``<data dir>/metrics`` (prometheus_client's multiprocess mode), and a scrape
served by any worker adds them all up, so a call is counted once whichever
worker served it. The master empties that directory at start
(``prepare_multiprocess_dir``, from gunicorn's ``on_starting``) and marks a
dead worker (``child_exit``). Outside gunicorn (the Flask test client, the
CLI) the values simply live in the process.

prometheus_client chooses where values live when it is imported, from
PROMETHEUS_MULTIPROC_DIR. ``activate`` checks that choice again after the
variable is set, so the order of imports never matters. Every family here
has labels, so no value exists before the first count in a worker.

Label values are fixed words of the code (method names from the catalogue,
error codes, reasons, tool names): never a token, a chat_id, a file_id or
user text.
"""
from __future__ import annotations

import contextlib
import hmac
import os
import shutil
import sqlite3

from flask import Blueprint, Response, current_app, request
from prometheus_client import CollectorRegistry, Counter, Histogram, mmap_dict, values
from prometheus_client.core import GaugeMetricFamily
from prometheus_client.exposition import CONTENT_TYPE_PLAIN_0_0_4, generate_latest
from prometheus_client.multiprocess import MultiProcessCollector, mark_process_dead

from app import disk
from app.auth import bearer_token
from app.errors import ApiError, ErrorCode

MULTIPROC_ENV = "PROMETHEUS_MULTIPROC_DIR"

# The families a worker counts into; ``registry=OWN`` keeps them apart from
# prometheus_client's process collectors, which describe one process only.
OWN = CollectorRegistry(auto_describe=True)
API_REQUESTS = Counter("botsvc_api_requests_total", "Calls of /v2 methods, by method and "
                       "outcome (ok or the error_code)", ["method", "code"], registry=OWN)
API_DURATION = Histogram("botsvc_api_request_duration_seconds", "Time to answer a /v2 call",
                         ["method"], registry=OWN,
                         buckets=(.001, .0025, .005, .01, .025, .05, .1, .25, .5, 1, 2.5, 10,
                                  60))
RATE_LIMITED = Counter("botsvc_rate_limited_total", "Requests refused by a per-bot rate "
                       "limit, by bucket", ["bucket"], registry=OWN)
WEBHOOK_DELIVERIES = Counter("botsvc_webhook_deliveries_total", "Webhook delivery attempts, "
                             "by result (delivered, failed)", ["result"], registry=OWN)
BROADCAST_RECIPIENTS = Counter("botsvc_broadcast_recipients_total", "Broadcast recipients "
                               "that reached a final status (sent, failed, cancelled)",
                               ["status"], registry=OWN)
UPLOADS = Counter("botsvc_uploads_total", "Files through the upload pipeline, by result "
                  "(clean, or the reason or code that refused them)", ["result"], registry=OWN)
MEDIA_TOOL_DURATION = Histogram("botsvc_media_tool_duration_seconds", "Runs of external media "
                                "tools (ffmpeg, ffprobe, clamav, ...)", ["tool"], registry=OWN,
                                buckets=(.01, .05, .1, .25, .5, 1, 2.5, 5, 10, 30, 60, 300,
                                         900))


# -- what the choke points call ----------------------------------------------------

_children: dict[tuple, object] = {}


class _Uncounted:
    """What a count goes to when the disk could not take its value's file."""

    def inc(self, amount: float = 1) -> None:
        pass

    def observe(self, amount: float) -> None:
        pass


def _child(family, *labels: str):
    """``family.labels(*labels)``, kept: prometheus_client's lookup takes a
    lock and builds a key each time (4 us, measured); the label sets are
    bounded, and so is this dict. A new value needs room in its worker's
    file: on a full disk it is not counted (tried again at the next count),
    and the request goes on."""
    key = (family, *labels)
    child = _children.get(key)
    if child is None:
        try:
            child = _children[key] = family.labels(*labels)
        except OSError as error:
            if not disk.is_disk_full(error):
                raise
            return _Uncounted()
    return child


class _AllocatedMmapedDict(mmap_dict.MmapedDict):
    """prometheus_client's file of one worker's values, with its blocks
    allocated before they are mapped. Its own file is sparse: on a full disk
    the first write to a new page is a SIGBUS that kills the worker; allocated
    first, the disk's refusal is an OSError (ENOSPC), and ``_child`` skips
    the count."""

    def __init__(self, filename, read_mode=False):
        if not read_mode:
            with open(filename, "a+b") as fh:
                if os.fstat(fh.fileno()).st_size == 0:
                    try:
                        os.posix_fallocate(fh.fileno(), 0, mmap_dict._INITIAL_MMAP_SIZE)
                    except OSError:
                        os.unlink(filename)   # an empty file would break the scrape
                        raise
        super().__init__(filename, read_mode)

    def _init_value(self, key):
        encoded = key.encode("utf-8")
        size = 4 + len(encoded) + (8 - (len(encoded) + 4) % 8) + 16   # as the parent packs it
        capacity = self._capacity
        while self._used + size > capacity:
            capacity *= 2
        if capacity != self._capacity:
            os.posix_fallocate(self._f.fileno(), 0, capacity)
        super()._init_value(key)


def api_request(method: str, code: str, seconds: float) -> None:
    """One /v2 call answered; ``method`` is a catalogue name or ``unknown``."""
    if not _counting:
        return
    _child(API_REQUESTS, method, code).inc()
    _child(API_DURATION, method).observe(seconds)


def rate_limited(bucket: str) -> None:
    if _counting:
        _child(RATE_LIMITED, bucket).inc()


def webhook_attempt(delivered: bool) -> None:
    if _counting:
        _child(WEBHOOK_DELIVERIES, "delivered" if delivered else "failed").inc()


def broadcast_recipients(status: str, count: int = 1) -> None:
    if count and _counting:
        _child(BROADCAST_RECIPIENTS, status).inc(count)


def upload(result: str) -> None:
    if _counting:
        _child(UPLOADS, result).inc()


def upload_refused(error: ApiError) -> None:
    """A refused upload counts under its reason word, else its error code."""
    upload(str(error.parameters.get("reason") or error.code.value.lower()))


def media_tool(tool: str, seconds: float) -> None:
    if _counting:
        _child(MEDIA_TOOL_DURATION, tool).observe(seconds)


# -- processes ---------------------------------------------------------------------

def multiprocess_dir(data_dir: str) -> str:
    return os.path.join(data_dir, "metrics")


def prepare_multiprocess_dir(data_dir: str) -> str:
    """In gunicorn's master, before any worker: an empty directory for this
    run's values (a previous run's would be added in), named in the
    environment the workers inherit."""
    path = multiprocess_dir(data_dir)
    shutil.rmtree(path, ignore_errors=True)
    os.makedirs(path, mode=0o700, exist_ok=True)
    os.environ[MULTIPROC_ENV] = path
    activate()
    return path


_counting = True


def activate(counting: bool = True) -> None:
    """Values go to the shared files when PROMETHEUS_MULTIPROC_DIR is set,
    even if prometheus_client was imported before it was. ``counting=False``
    (BOTSVC_METRICS=0) makes every counting function a no-op."""
    global _counting
    _counting = counting
    values.MmapedDict = _AllocatedMmapedDict   # looked up when a value's file is opened
    if os.environ.get(MULTIPROC_ENV) and not getattr(values.ValueClass, "_multiprocess", False):
        values.ValueClass = values.MultiProcessValue()


def reserve_value_files() -> None:
    """This worker's value files, made with their blocks allocated when it
    starts rather than at its first count: a worker that has counted nothing
    yet when the disk fills still counts, up to its files' first size."""
    if not (_counting and _multiprocess()):
        return
    for kind in ("counter", "histogram"):   # the kinds of the families above
        path = os.path.join(os.environ[MULTIPROC_ENV], f"{kind}_{os.getpid()}.db")
        with contextlib.suppress(OSError):   # no room now: made at the first count
            _AllocatedMmapedDict(path).close()


def worker_exited(pid: int) -> None:
    """gunicorn's ``child_exit``: the dead worker's live gauges are dropped
    (its counters stay: what it counted happened)."""
    if os.environ.get(MULTIPROC_ENV):
        mark_process_dead(pid)


def _multiprocess() -> bool:
    return bool(getattr(values.ValueClass, "_multiprocess", False)
                and os.environ.get(MULTIPROC_ENV))


# -- the scrape --------------------------------------------------------------------

class DatabaseCollector:
    """Gauges read when scraped: one cheap query or stat each."""

    def __init__(self, conn: sqlite3.Connection, data_dir: str, db_path: str):
        self.conn, self.data_dir, self.db_path = conn, data_dir, db_path

    def collect(self):
        from app.clock import now
        from app.domain.updates import RETENTION_SECONDS

        pending = self.conn.execute("SELECT COUNT(*) FROM updates WHERE created_at >= ?",
                                    (now() - RETENTION_SECONDS,)).fetchone()[0]
        yield GaugeMetricFamily("botsvc_updates_pending", "Updates queued and not yet "
                                "acknowledged or delivered, all bots", value=pending)
        size = 0
        for path in (self.db_path, self.db_path + "-wal"):
            with contextlib.suppress(FileNotFoundError):
                size += os.path.getsize(path)
        yield GaugeMetricFamily("botsvc_db_size_bytes", "The SQLite database with its "
                                "write-ahead log", value=size)
        yield GaugeMetricFamily("botsvc_disk_free_bytes", "Free bytes on the data dir's file "
                                "system", value=disk.free_bytes(self.data_dir))
        yield from self.collect_jobs()

    def collect_jobs(self):
        """Each background job's last success and whether it is stuck (no
        success in several intervals) or failing, from its run records."""
        from app.clock import machine_time
        from app.jobs.health import job_health

        last = GaugeMetricFamily("botsvc_job_last_success_timestamp_seconds",
                                 "When the job last succeeded (machine time; absent: never)",
                                 labels=["job"])
        stuck = GaugeMetricFamily("botsvc_job_stuck", "1 when the job has not succeeded "
                                  "for several of its intervals", labels=["job"])
        failing = GaugeMetricFamily("botsvc_job_failing", "1 when the job's last pass failed",
                                    labels=["job"])
        for job in job_health(self.conn, machine_time()):
            if job["last_success_at"] is not None:
                last.add_metric([job["name"]], job["last_success_at"])
            stuck.add_metric([job["name"]], int(job["stuck"]))
            failing.add_metric([job["name"]], int(job["failing"]))
        yield from (last, stuck, failing)


class _Scrape:
    """Several collectors as one registry for ``generate_latest``."""

    def __init__(self, *collectors):
        self.collectors = collectors

    def collect(self):
        for collector in self.collectors:
            yield from collector.collect()


def exposition(conn: sqlite3.Connection, data_dir: str, db_path: str) -> bytes:
    counted = MultiProcessCollector(None, os.environ[MULTIPROC_ENV]) if _multiprocess() else OWN
    return generate_latest(_Scrape(counted, DatabaseCollector(conn, data_dir, db_path)))


bp = Blueprint("metrics", __name__)


@bp.get("/metrics")
def metrics_route() -> Response:
    settings = current_app.config["SETTINGS"]
    accepted = [token for token in (settings.metrics_token, settings.admin_token) if token]
    if not accepted or not settings.metrics_enabled:
        raise ApiError(ErrorCode.METHOD_NOT_FOUND, "Not found")
    presented = (bearer_token(request.headers.get("Authorization")) or "").encode(
        "utf-8", "surrogateescape")
    # Every token is compared, so the time taken tells nothing about which matched.
    matches = [hmac.compare_digest(presented, token.encode("utf-8", "surrogateescape"))
               for token in accepted]
    if not any(matches):
        raise ApiError(ErrorCode.UNAUTHORIZED, "Missing or invalid metrics token")
    from app.db import get_db

    body = exposition(get_db(), settings.data_dir, settings.db_path)
    return Response(body, status=200, content_type=CONTENT_TYPE_PLAIN_0_0_4)

