"""Health, metrics and logs over real HTTP against scripts/server with 2
gunicorn workers: calls counted exactly once whichever worker
served them, label values from fixed sets only, readiness turning 503 when
the database file becomes read-only and degraded without ffmpeg, each start
counting from zero, request ids
in JSON log lines on the server's stderr, and no token or query string in
the log."""
from __future__ import annotations

import json
import os
import re
import shutil
import subprocess
from pathlib import Path

import pytest
import requests
from prometheus_client.mmap_dict import MmapedDict, mmap_key
from prometheus_client.parser import text_string_to_metric_families

from botsvc.api.registry import METHODS
from botsvc.devkit.servers import suite_server
from botsvc.errors import ErrorCode

pytestmark = pytest.mark.server

METRICS_TOKEN = "metrics-token-over-http"


@pytest.fixture(scope="module")
def server(tmp_path_factory):
    server = suite_server(tmp_path_factory.mktemp("observed") / "data",
                           BOTSVC_LOG_FORMAT="json", BOTSVC_ACCESS_LOG="1",
                           BOTSVC_METRICS_TOKEN=METRICS_TOKEN)
    try:
        yield server.start()
    finally:
        server.kill()


@pytest.fixture(scope="module")
def bot(server):
    created = server.operator("createBot", username="observed_bot")
    return created["bot"]["id"], created["token"]


def call(server, token: str, method: str, headers: dict | None = None, **params):
    # A new connection each time: gunicorn hands them to either worker.
    return requests.post(f"{server.base_url}/v2/{method}", json=params, timeout=30,
                         headers={"Authorization": f"Bearer {token}", **(headers or {})})


def scrape(server, token: str = METRICS_TOKEN) -> dict:
    """{(sample name, frozenset(labels)): value}."""
    response = requests.get(f"{server.base_url}/metrics", timeout=30,
                            headers={"Authorization": f"Bearer {token}"})
    assert response.status_code == 200, response.text
    assert response.headers["Content-Type"].startswith("text/plain")
    return {(sample.name, frozenset(sample.labels.items())): sample.value
            for family in text_string_to_metric_families(response.text)
            for sample in family.samples}


def log_lines(server) -> list[dict]:
    """The JSON lines the service wrote (everything after the launcher's
    own lines), each parsed: a line that is not one JSON object fails."""
    text = server.log_path.read_text()
    served = text.split("botsvc: serving on", 1)[1].split("\n", 1)[1]
    return [json.loads(line) for line in served.splitlines() if line]


def served_by(server, request_ids: set[str]) -> set[int]:
    return {line["process"] for line in log_lines(server)
            if line["logger"] == "botsvc.access" and line["request_id"] in request_ids}


def families_at_zero(scraped: dict) -> dict[str, set]:
    """{sample name: the label sets scraped at 0}."""
    found: dict[str, set] = {}
    for (name, labels), value in scraped.items():
        if value == 0:
            found.setdefault(name, set()).add(labels)
    return found


def label_sets(name: str, values) -> set:
    return {frozenset({name: value}.items()) for value in values}


# The first test of the module (its server is fresh): nothing was counted yet.
def test_the_first_scrape_holds_every_family_at_zero(server):
    scraped = scrape(server)
    zero = families_at_zero(scraped)
    methods = {frozenset({"method": name, "code": "ok"}.items()) for name in METHODS}
    assert methods <= zero["botsvc_api_requests_total"]
    for sample in ("_count", "_sum", "_bucket"):
        timed = zero[f"botsvc_api_request_duration_seconds{sample}"]
        assert {dict(labels)["method"] for labels in timed} == set(METHODS)
    assert zero["botsvc_webhook_deliveries_total"] == label_sets("result", ("delivered", "failed"))
    assert zero["botsvc_broadcast_recipients_total"] == label_sets(
        "status", ("sent", "failed", "cancelled"))
    uploads = {"clean", "infected", "unsupported_type", "pdf_active", "quota_exceeded",
               "dependency_unavailable"}
    assert label_sets("result", uploads) <= zero["botsvc_uploads_total"]
    assert zero["botsvc_rate_limited_total"] == label_sets(
        "bucket", ("api", "send", "upload", "broadcast"))
    assert zero["botsvc_media_tool_duration_seconds_count"] == label_sets(
        "tool", ("ffmpeg", "ffprobe", "clamav", "pikepdf"))
    for gauge in ("botsvc_updates_pending", "botsvc_db_size_bytes", "botsvc_disk_free_bytes"):
        assert (gauge, frozenset()) in scraped
    counted = {name for name, _ in scraped if name.startswith(("botsvc_api", "botsvc_webhook",
               "botsvc_broadcast", "botsvc_uploads", "botsvc_rate", "botsvc_media"))}
    assert all(scraped[key] == 0 for key in scraped if key[0] in counted)


def test_calls_are_counted_once_across_both_workers(server, bot):
    bot_id, token = bot
    ids: set[str] = set()
    calls = 0
    while calls < 400 and (calls < 40 or len(served_by(server, ids)) < 2):
        for _ in range(20):
            answer = call(server, token, "getMe")
            assert answer.status_code == 200
            ids.add(answer.headers["X-Request-Id"])
            calls += 1
    assert len(served_by(server, ids)) == 2, "one worker served every call"
    key = ("botsvc_api_requests_total", frozenset({"method": "getMe", "code": "ok"}.items()))
    timed = ("botsvc_api_request_duration_seconds_count", frozenset({"method": "getMe"}.items()))
    for _ in range(4):   # whichever worker answers the scrape
        scraped = scrape(server)
        assert scraped[key] == calls
        assert scraped[timed] == calls


def test_label_values_come_from_fixed_sets(server, bot):
    _, token = bot
    for name in ("noSuchMethod", "getMe2", "x" * 100):
        assert call(server, token, name).json()["error_code"] == "METHOD_NOT_FOUND"
    assert call(server, "1:" + "A" * 43, "getMe").status_code == 401
    scraped = scrape(server)
    unknown = ("botsvc_api_requests_total",
               frozenset({"method": "unknown", "code": "METHOD_NOT_FOUND"}.items()))
    assert scraped[unknown] == 3
    codes = {code.value for code in ErrorCode} | {"ok"}
    for (name, labels), _ in scraped.items():
        labels = dict(labels)
        if name.startswith("botsvc_api_"):
            assert labels["method"] in set(METHODS) | {"unknown"}, labels
        if name == "botsvc_api_requests_total":
            assert labels["code"] in codes, labels
    text = requests.get(f"{server.base_url}/metrics", timeout=30,
                        headers={"Authorization": f"Bearer {METRICS_TOKEN}"}).text
    assert token not in text and "noSuchMethod" not in text and server.admin_token not in text
    for family in ("botsvc_updates_pending", "botsvc_db_size_bytes", "botsvc_disk_free_bytes"):
        assert (family, frozenset()) in scraped


def test_metrics_take_either_token_and_refuse_others(server):
    scrape(server, METRICS_TOKEN)
    scrape(server, server.admin_token)
    for headers in ({}, {"Authorization": "Bearer not-the-token"}):
        answer = requests.get(f"{server.base_url}/metrics", headers=headers, timeout=30)
        assert answer.status_code == 401
        assert answer.json() == {"ok": False, "error_code": "UNAUTHORIZED",
                                 "description": "Missing or invalid metrics token",
                                 "parameters": {}}


def test_request_ids_reach_the_json_log_and_no_secret_does(server, bot):
    bot_id, token = bot
    echoed = call(server, token, "getMe", headers={"X-Request-Id": "trace-42.a:b"})
    assert echoed.headers["X-Request-Id"] == "trace-42.a:b"
    replaced = call(server, token, "sendMessage", headers={"X-Request-Id": "bad id"},
                    chat_id="123", text="a body that is never logged")
    new_id = replaced.headers["X-Request-Id"]
    assert re.fullmatch(r"[0-9a-f]{32}", new_id)
    link = requests.get(f"{server.base_url}/download.php?id=AAAA&exp=1&sig={'0' * 64}",
                        timeout=30)
    assert link.status_code == 401
    lines = log_lines(server)
    by_id = {line["request_id"]: line for line in lines if line["logger"] == "botsvc.access"}
    fields = ["time", "level", "request_id", "bot_id", "method", "status", "error_code",
              "duration_ms", "message", "logger", "process"]
    first = by_id["trace-42.a:b"]
    assert list(first) == fields
    assert (first["level"], first["bot_id"], first["method"], first["status"],
            first["error_code"]) == ("INFO", bot_id, "getMe", 200, None)
    assert isinstance(first["duration_ms"], float) and first["duration_ms"] >= 0
    second = by_id[new_id]
    assert (second["method"], second["status"], second["error_code"]) == (
        "sendMessage", 404, "CHAT_NOT_FOUND")
    text = server.log_path.read_text()
    for secret in (token, server.admin_token, METRICS_TOKEN, "sig=", "exp=1",
                   "never logged"):
        assert secret not in text
    assert all(line["request_id"] is None for line in lines
               if line["logger"] == "gunicorn.error" or line["logger"].startswith("botsvc.jobs"))
    assert not any("apscheduler" in line["logger"] or "Scheduler started" in line["message"]
                   for line in lines)


@pytest.mark.skipif(os.geteuid() != 0 or shutil.which("chattr") is None,
                    reason="chattr +i needs root (chmod does not stop root)")
def test_readiness_turns_503_while_the_database_file_is_read_only(server):
    assert requests.get(f"{server.base_url}/readyz", timeout=30).json()["result"] == {
        "status": "ready", "checks": {"database": "ok", "media": "ok", "disk": "ok"}}
    if subprocess.run(["chattr", "+i", server.db_path], capture_output=True).returncode:
        pytest.skip("this file system does not support the immutable attribute")
    try:
        answers = [requests.get(f"{server.base_url}/readyz", timeout=30) for _ in range(4)]
    finally:
        subprocess.run(["chattr", "-i", server.db_path], check=True)
    for answer in answers:   # whichever worker answers
        assert answer.status_code == 503
        assert answer.json()["error_code"] == "NOT_READY"
        assert answer.json()["parameters"] == {"checks": {"database": "read_only",
                                                          "media": "ok", "disk": "ok"}}
    assert requests.get(f"{server.base_url}/healthz", timeout=30).json() == {
        "ok": True, "result": {"status": "alive"}}
    assert requests.get(f"{server.base_url}/readyz", timeout=30).status_code == 200


def test_without_ffmpeg_on_the_path_the_server_is_degraded(tmp_path):
    tools = tmp_path / "bin-without-ffmpeg"
    tools.mkdir()
    for entry in Path("/usr/bin").iterdir():
        if entry.name != "ffmpeg":
            os.symlink(entry, tools / entry.name)
    server = suite_server(tmp_path / "data", PATH=f"{tools}:/usr/sbin:/sbin")
    leftover = server.data_dir / "metrics" / "counter_1.db"   # a previous run's count
    leftover.parent.mkdir(parents=True)
    previous = MmapedDict(str(leftover))
    previous.write_value(mmap_key("botsvc_api_requests_total", "botsvc_api_requests_total",
                                  ["method", "code"], ["getMe", "ok"], "old"), 5.0, 0.0)
    previous.close()
    try:
        server.start()
        answer = requests.get(f"{server.base_url}/readyz", timeout=30)
        scraped = scrape(server, server.admin_token)
    finally:
        server.kill()
    # Each start counts from zero: the directory was emptied.
    assert scraped[("botsvc_api_requests_total",
                    frozenset({"method": "getMe", "code": "ok"}.items()))] == 0
    assert answer.status_code == 200
    assert answer.json() == {"ok": True, "result": {"status": "degraded", "checks": {
        "database": "ok", "media": "ffmpeg_unavailable", "disk": "ok"}}}
    # botsvc serve said so before serving, and served anyway.
    started = server.log_path.read_text().split("botsvc: serving on", 1)[0]
    assert '"error_code": "DEPENDENCY_UNAVAILABLE"' in started
    assert "WARNING: the media tools or the virus scanner do not work" in started
