"""gunicorn settings for `botsvc serve` (and scripts/bench's bare endpoint),
loaded from the installed package by name: `gunicorn -c python:botsvc.gunicorn_conf`."""
import sys

from botsvc import metrics
from botsvc.config import Settings
from botsvc.connection import request_head
from botsvc.jobs.scheduler import stop_worker
from botsvc.logs import gunicorn_logconfig
from botsvc.migrations import DatabaseNewerThanCode, migrate

# Read and checked with every other setting: a bad value stops the start here
# with one line naming it. The signing key is left to the workers.
settings = Settings.from_env(secret=False)
bind = settings.bind
workers = settings.workers
# Threads keep a worker answering while one of its requests waits on ffmpeg
# or ClamAV; all shared state lives in SQLite, so threads need no locks.
# gthread, plus what its connections need (app/botsvc/gunicorn_worker.py).
worker_class = "botsvc.gunicorn_worker.BotsvcWorker"
threads = settings.threads
# The worker reads each request head itself, within the limits of
# app/botsvc/connection/request_head.py, before gunicorn parses it; gunicorn's own limits are
# the same (its field size counts the CRLF), so they can never be reached
# first, and its parser is never asked to hold more.
limit_request_line = request_head.REQUEST_LINE_MAX_BYTES
limit_request_field_size = request_head.HEADER_FIELD_MAX_BYTES + 2
limit_request_fields = request_head.HEADER_FIELDS_MAX
# How long an idle kept-alive connection stays open. A client whose next
# request leaves just as the server closes the connection gets no answer, so
# the server's idle time is longer than its clients': nginx's upstream pool
# keeps idle connections 60 s, Go's http.Transport 90 s, httpx 5 s, aiohttp
# 15 s, Node's agents 4-5 s (gunicorn's 2 s met a bot polling every 2 s). An
# idle connection costs a file descriptor and no thread (docs/connection.md).
keepalive = 120
timeout = 900          # an upload may transcode for minutes
graceful_timeout = 30
preload_app = False    # no database connection or scheduler may cross fork()
# gunicorn 27's control socket defaults to one path per user, shared by every
# instance on the machine (tests and benchmarks run several); unused here.
control_socket_disable = True
# The application writes the access line itself (app/botsvc/logs.py: with the
# request id, the bot and the error code; BOTSVC_ACCESS_LOG=0 turns it off).
accesslog = None


def _logconfig():
    # gunicorn's own lines in the format of the application's (JSON or text).
    return gunicorn_logconfig(settings.log_format)


logconfig_dict = _logconfig() or {}


def worker_exit(server, worker):
    # Stop this worker's scheduler before the interpreter exits, so that no
    # tick is submitted to an executor that is already shut down.
    stop_worker()


def child_exit(server, worker):
    metrics.worker_exited(worker.pid)


def on_starting(server):
    # Migrate once in the master, before any worker starts (a no-op again in
    # each worker's create_app); on a database that a newer botsvc migrated,
    # the server stops here with one line. The connection is closed before
    # the workers fork.
    try:
        migrate(settings.db_path)
    except DatabaseNewerThanCode as refused:
        print(f"botsvc: {refused}", file=sys.stderr, flush=True)
        sys.exit(1)
    # Each run counts from zero; the workers inherit the directory's name.
    metrics.prepare_multiprocess_dir(settings.data_dir)
