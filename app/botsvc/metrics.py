"""Prometheus metrics: the families, and the small functions
the choke points call to count. ``GET /metrics`` is app/botsvc/routes/metrics.py.

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
has labels, so a value would exist only after its first count; each process
makes the known ones at zero when it starts (``count_from_zero``), so that
a dashboard or an alert reads 0 from the first scrape, not "no data".

Label values are fixed words of the code (method names from the catalogue,
error codes, reasons, tool names): never a token, a chat_id, a file_id or
user text.
"""
from __future__ import annotations

import contextlib
import os
import shutil

from prometheus_client import CollectorRegistry, Counter, Histogram, mmap_dict, values
from prometheus_client.multiprocess import MultiProcessCollector, mark_process_dead

from botsvc import disk
from botsvc.errors import UPLOAD_REASONS, ApiError, ErrorCode

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


WEBHOOK_RESULTS = ("delivered", "failed")
BROADCAST_STATUSES = ("sent", "failed", "cancelled")
# clean, each reason word, and the codes the pipeline fails closed with.
UPLOAD_RESULTS = ("clean", *UPLOAD_REASONS, *(code.value.lower() for code in (
    ErrorCode.DEPENDENCY_UNAVAILABLE, ErrorCode.STORAGE_FULL)))


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


def entry_size(key: str) -> int:
    """Bytes one value takes in a value file, as prometheus_client packs it:
    the key's length, the key padded to 8 bytes, the value and its timestamp."""
    encoded = key.encode("utf-8")
    return 4 + len(encoded) + (8 - (len(encoded) + 4) % 8) + 16


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
        size = entry_size(key)
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
        _child(WEBHOOK_DELIVERIES, WEBHOOK_RESULTS[0] if delivered else WEBHOOK_RESULTS[1]).inc()


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


def count_from_zero(api_methods, rate_buckets, media_tools) -> None:
    """Every family with its known label values, at zero, in this process
    (in its value files under gunicorn), as Prometheus' instrumentation
    guidance asks: the /v2 methods with code ``ok``, each outcome of webhook
    deliveries, broadcast recipients and uploads, each rate-limit bucket and
    each media tool. Once per process: the children are kept (``_child``),
    so the counting functions find them made."""
    if not _counting:
        return
    for method in api_methods:
        _child(API_REQUESTS, method, "ok")
        _child(API_DURATION, method)
    for family, known in ((RATE_LIMITED, rate_buckets), (WEBHOOK_DELIVERIES, WEBHOOK_RESULTS),
                          (BROADCAST_RECIPIENTS, BROADCAST_STATUSES), (UPLOADS, UPLOAD_RESULTS),
                          (MEDIA_TOOL_DURATION, media_tools)):
        for value in known:
            _child(family, value)


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


def counted_collector():
    """What the workers counted: every worker's files added up under
    gunicorn, this process's own values otherwise."""
    return MultiProcessCollector(None, os.environ[MULTIPROC_ENV]) if _multiprocess() else OWN
