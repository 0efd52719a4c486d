"""GET /metrics: what every worker counted (app/botsvc/metrics.py),
and gauges read at scrape time: pending updates, the database's size, free
disk, and each background job's health. 404 unless a metrics or admin token
is set; every token is compared, so the time taken tells nothing about which
one matched."""
from __future__ import annotations

import contextlib
import hmac
import os
import sqlite3

from flask import Blueprint, Response, current_app, request
from prometheus_client.core import GaugeMetricFamily
from prometheus_client.exposition import CONTENT_TYPE_PLAIN_0_0_4, generate_latest

from botsvc import disk, metrics
from botsvc.auth import bearer_token
from botsvc.clock import machine_time, now
from botsvc.contract import RETENTION_SECONDS
from botsvc.db import get_db
from botsvc.errors import ApiError, ErrorCode
from botsvc.jobs.health import job_health

bp = Blueprint("metrics", __name__)


class DatabaseCollector:
    """Gauges read when scraped: one cheap query or stat each."""

    def __init__(self, conn: sqlite3.Connection, data_dir: str, db_path: str):
        self.conn, self.data_dir, self.db_path = conn, data_dir, db_path

    def collect(self):
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
    return generate_latest(_Scrape(metrics.counted_collector(),
                                   DatabaseCollector(conn, data_dir, db_path)))


@bp.get("/metrics")
def metrics_route() -> Response:
    settings = current_app.config["SETTINGS"]
    accepted = [token for token in (settings.metrics_token, settings.admin_token) if token]
    if not accepted or not settings.metrics_enabled:
        raise ApiError(ErrorCode.METHOD_NOT_FOUND, "Not found")
    presented = (bearer_token(request.headers.get("Authorization")) or "").encode(
        "utf-8", "surrogateescape")
    matches = [hmac.compare_digest(presented, token.encode("utf-8", "surrogateescape"))
               for token in accepted]
    if not any(matches):
        raise ApiError(ErrorCode.UNAUTHORIZED, "Missing or invalid metrics token")
    body = exposition(get_db(), settings.data_dir, settings.db_path)
    return Response(body, status=200, content_type=CONTENT_TYPE_PLAIN_0_0_4)
