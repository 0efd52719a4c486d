"""The installation's own routes in process: /healthz, /readyz
and its checks, /metrics (auth, families, label values, the choke points'
counts) and X-Request-Id on every route. Counts live in this process here,
so each test compares before and after; tests/ops/test_observability_server.py
checks the same over HTTP against 2 gunicorn workers."""
from __future__ import annotations

import io
import os
import re
import shutil
import subprocess
from pathlib import Path

import pytest
from prometheus_client.parser import text_string_to_metric_families

from botsvc import media, metrics
from botsvc.devkit.paths import REPO
from botsvc.errors import UPLOAD_REASONS, Reason
from botsvc.jobs import run_job
from botsvc.routes import health
from tests.support.conformance import document
from tests.support.contract import ADMIN_TOKEN, BotClient, Operator, assert_failure

METRICS_TOKEN = "metrics-token-for-tests"
FAMILIES = {  # the contract: every family and its labels
    "botsvc_api_requests_total": {"method", "code"},
    "botsvc_api_request_duration_seconds": {"method"},
    "botsvc_updates_pending": set(),
    "botsvc_webhook_deliveries_total": {"result"},
    "botsvc_broadcast_recipients_total": {"status"},
    "botsvc_uploads_total": {"result"},
    "botsvc_media_tool_duration_seconds": {"tool"},
    "botsvc_db_size_bytes": set(),
    "botsvc_disk_free_bytes": set(),
}


@pytest.fixture
def scanner_settings(offline_scanner) -> dict:
    return offline_scanner


def counted(name: str, **labels) -> float:
    return metrics.OWN.get_sample_value(name, labels) or 0.0


def scrape(client, token: str = ADMIN_TOKEN) -> dict:
    """{sample name: {frozenset(labels): value}} of one scrape."""
    response = client.get("/metrics", headers={"Authorization": f"Bearer {token}"})
    assert response.status_code == 200, response.get_data(as_text=True)
    assert response.mimetype == "text/plain"
    found: dict = {}
    for family in text_string_to_metric_families(response.get_data(as_text=True)):
        for sample in family.samples:
            found.setdefault(sample.name, {})[frozenset(sample.labels.items())] = sample.value
    return found


# -- /healthz and /readyz ------------------------------------------------------------

def test_healthz_answers_alive(client):
    response = client.get("/healthz")
    assert response.status_code == 200
    assert response.get_json() == {"ok": True, "result": {"status": "alive"}}


def test_readyz_is_ready_when_every_check_passes(client):
    health.forget_media_results()
    response = client.get("/readyz")
    assert response.status_code == 200
    assert response.get_json() == {"ok": True, "result": {"status": "ready", "checks": {
        "database": "ok", "media": "ok", "disk": "ok"}}}


def readyz_probing_the_tools_now(client):
    """/readyz with the media tools run now (not a cached answer), and no
    answer left cached for the next test."""
    health.forget_media_results()
    try:
        return client.get("/readyz")
    finally:
        health.forget_media_results()


def test_a_missing_media_tool_only_degrades(client, tmp_path, monkeypatch):
    tools = tmp_path / "tools-without-ffmpeg"
    tools.mkdir()
    for name in ("ffprobe", "clamscan"):
        os.symlink(shutil.which(name), tools / name)
    monkeypatch.setenv("PATH", str(tools))
    response = readyz_probing_the_tools_now(client)
    assert response.status_code == 200
    assert response.get_json()["result"] == {"status": "degraded", "checks": {
        "database": "ok", "media": "ffmpeg_unavailable", "disk": "ok"}}


@pytest.mark.clamscan
def test_a_scanner_without_signatures_only_degrades(make_app, tmp_path):
    client = make_app(clamav_db=str(tmp_path)).test_client()   # an empty directory
    response = readyz_probing_the_tools_now(client)
    assert response.status_code == 200
    assert response.get_json()["result"]["checks"]["media"] == "clamav_no_signatures"


def test_the_media_answer_is_kept_for_a_minute(client, tmp_path, monkeypatch):
    health.forget_media_results()
    assert client.get("/readyz").get_json()["result"]["checks"]["media"] == "ok"
    monkeypatch.setenv("PATH", str(tmp_path))   # no tool at all now ...
    assert client.get("/readyz").get_json()["result"]["checks"]["media"] == "ok"  # ... cached
    monkeypatch.setattr(health, "MEDIA_CACHE_SECONDS", 0.0)
    assert client.get("/readyz").get_json()["result"]["checks"]["media"] == "ffmpeg_unavailable"
    health.forget_media_results()


def test_too_little_free_disk_is_not_ready(make_app):
    client = make_app(min_free_bytes=2 ** 62).test_client()
    body = assert_failure(client.get("/readyz"), 503, "NOT_READY")
    assert body["parameters"] == {"checks": {"database": "ok", "media": "ok",
                                             "disk": "low_free_space"}}


def test_a_schema_behind_the_code_is_not_ready(client, db):
    db.execute("DELETE FROM schema_migrations WHERE name = '0009_sandbox.sql'")
    body = assert_failure(client.get("/readyz"), 503, "NOT_READY")
    assert body["parameters"]["checks"]["database"] == "schema_outdated"


def test_a_database_locked_by_a_stuck_writer_is_not_ready(client, db, monkeypatch):
    monkeypatch.setattr(health, "DATABASE_TIMEOUT_SECONDS", 0.2)
    db.execute("BEGIN IMMEDIATE")
    try:
        body = assert_failure(client.get("/readyz"), 503, "NOT_READY")
    finally:
        db.execute("ROLLBACK")
    assert body["parameters"]["checks"]["database"] == "locked"
    assert client.get("/readyz").status_code == 200


@pytest.mark.skipif(os.geteuid() != 0 or shutil.which("chattr") is None,
                    reason="chattr +i needs root (chmod does not stop root)")
def test_a_read_only_database_file_is_not_ready(app, client):
    db_path = app.config["SETTINGS"].db_path
    if subprocess.run(["chattr", "+i", db_path], capture_output=True).returncode != 0:
        pytest.skip("this file system does not support the immutable attribute")
    try:
        body = assert_failure(client.get("/readyz"), 503, "NOT_READY")
    finally:
        subprocess.run(["chattr", "-i", db_path], check=True)
    assert body["parameters"]["checks"]["database"] == "read_only"
    assert "/" not in body["description"] and db_path not in str(body)
    assert client.get("/readyz").status_code == 200


# -- /metrics: who may read it ---------------------------------------------------------

def test_metrics_are_not_there_without_any_token(make_app):
    client = make_app(admin_token=None).test_client()
    assert_failure(client.get("/metrics"), 404, "METHOD_NOT_FOUND")
    assert_failure(client.get("/metrics", headers={"Authorization": "Bearer x"}),
                   404, "METHOD_NOT_FOUND")


def test_metrics_take_the_metrics_token_or_the_admin_token(make_app):
    client = make_app(metrics_token=METRICS_TOKEN).test_client()
    scrape(client, METRICS_TOKEN)
    scrape(client, ADMIN_TOKEN)
    for headers in ({}, {"Authorization": "Bearer wrong"}, {"Authorization": METRICS_TOKEN},
                    {"Authorization": f"Bearer {METRICS_TOKEN}x"}):
        assert_failure(client.get("/metrics", headers=headers), 401, "UNAUTHORIZED")


def test_the_metrics_token_alone_is_enough(make_app):
    client = make_app(admin_token=None, metrics_token=METRICS_TOKEN).test_client()
    scrape(client, METRICS_TOKEN)
    assert_failure(client.get("/metrics", headers={"Authorization": f"Bearer {ADMIN_TOKEN}"}),
                   401, "UNAUTHORIZED")


# -- /metrics: what it counts ----------------------------------------------------------

def test_every_family_is_there_with_its_labels(app, client, bot, chat, operator):
    bot.ok("sendMessage", chat_id=chat.chat_id, text="hello")
    bot.ok("createBroadcast", method="sendMessage", payload={"text": "all"})
    run_job(app, "deliver_due_broadcasts")
    bot.call("uploadFile", data={"file": (io.BytesIO(b""), "empty.txt")},
             content_type="multipart/form-data")
    metrics.webhook_attempt(False)   # webhook attempts are counted in tests/webhooks/
    health.forget_media_results()
    client.get("/readyz")            # runs the media tools
    response = client.get("/metrics", headers={"Authorization": f"Bearer {ADMIN_TOKEN}"})
    families = {family.name: family
                for family in text_string_to_metric_families(response.get_data(as_text=True))}
    for name, labels in FAMILIES.items():
        base = name.removesuffix("_total")
        assert base in families, name
        for sample in families[base].samples:
            assert set(sample.labels) - {"le"} == labels, sample


def test_the_values_made_at_zero_are_the_ones_counted():
    """Each process makes its known label values at zero when it starts
    (metrics.count_from_zero): the media tools are every tool a run names,
    the upload results every reason the pipeline or the quota refuses with."""
    media_sources = "".join(path.read_text() for path in (REPO / "app" / "botsvc" / "media").glob("*.py"))
    assert set(re.findall(r'dependency="([a-z]+)"', media_sources)) == set(media.TOOLS)
    refusing = media_sources + (REPO / "app" / "botsvc" / "domain" / "files.py").read_text()
    named = {Reason[name] for name in re.findall(r"Reason\.([A-Z_]+)", refusing)}
    named |= {reason for reason in Reason if reason.value.startswith("pdf_")}  # pdf_inspect's words
    assert named <= set(UPLOAD_REASONS) and "clean" in metrics.UPLOAD_RESULTS
    assert set(metrics.UPLOAD_RESULTS) >= {reason.value for reason in named}


def test_each_call_is_counted_once_under_its_method_and_outcome(bot, chat):
    before = counted("botsvc_api_requests_total", method="sendMessage", code="ok")
    failed = counted("botsvc_api_requests_total", method="sendMessage", code="CHAT_NOT_FOUND")
    timed = counted("botsvc_api_request_duration_seconds_count", method="sendMessage")
    for _ in range(3):
        bot.ok("sendMessage", chat_id=chat.chat_id, text="hi")
    bot.error("sendMessage", 404, "CHAT_NOT_FOUND", chat_id="999999999", text="hi")
    assert counted("botsvc_api_requests_total", method="sendMessage", code="ok") == before + 3
    assert counted("botsvc_api_requests_total", method="sendMessage",
                   code="CHAT_NOT_FOUND") == failed + 1
    assert counted("botsvc_api_request_duration_seconds_count",
                   method="sendMessage") == timed + 4


def test_unknown_method_names_count_as_unknown(client, bot):
    before = counted("botsvc_api_requests_total", method="unknown", code="METHOD_NOT_FOUND")
    for name in ("noSuchMethod", "a" * 200, "sendMessage2", "x%20y"):
        bot.error(name, 404, "METHOD_NOT_FOUND")
    assert counted("botsvc_api_requests_total", method="unknown",
                   code="METHOD_NOT_FOUND") == before + 4
    names = {labels["method"] for labels in
             (dict(key) for key in scrape(client).get("botsvc_api_requests_total", {}))}
    assert "noSuchMethod" not in names and "sendMessage2" not in names


def test_no_label_holds_a_token_a_chat_id_a_file_id_or_user_text(client, bot, chat):
    text = "user-text-never-a-label"
    sent = bot.ok("sendMessage", chat_id=chat.chat_id, text=text)
    bot.error("sendMessage", 404, "CHAT_NOT_FOUND", chat_id="123456789", text=text)
    response = client.get("/metrics", headers={"Authorization": f"Bearer {ADMIN_TOKEN}"})
    body = response.get_data(as_text=True)
    for secret in (bot.token, ADMIN_TOKEN, chat.chat_id, "123456789", text,
                   str(sent["message_id"]) + '"'):
        assert secret not in body


def test_rate_limit_refusals_are_counted_by_bucket(make_app):
    client = make_app(rate_api_per_sec=1).test_client()
    created = Operator(client)("createBot", username="limited_bot")
    bot = BotClient(client, created["bot"], created["token"])
    before = counted("botsvc_rate_limited_total", bucket="api")
    bot.ok("getMe")
    bot.error("getMe", 429, "RATE_LIMITED")
    assert counted("botsvc_rate_limited_total", bucket="api") == before + 1


def test_broadcast_recipients_are_counted_by_final_status(app, bot, start_chat, operator):
    from botsvc.db import connect

    chats = [start_chat(bot) for _ in range(3)]
    sent, failed, cancelled = (counted("botsvc_broadcast_recipients_total", status=status)
                               for status in ("sent", "failed", "cancelled"))
    bot.ok("createBroadcast", method="sendMessage", payload={"text": "news"})
    operator("userBlock", user_id=chats[0].user_id, bot_id=bot.id)   # fails at delivery
    run_job(app, "deliver_due_broadcasts")
    later = bot.ok("createBroadcast", method="sendMessage", payload={"text": "more"})
    bot.ok("cancelBroadcast", broadcast_id=later["broadcast_id"])
    bot.ok("cancelBroadcast", broadcast_id=later["broadcast_id"])   # changes nothing
    assert counted("botsvc_broadcast_recipients_total", status="sent") == sent + 2
    assert counted("botsvc_broadcast_recipients_total", status="failed") == failed + 1
    assert counted("botsvc_broadcast_recipients_total", status="cancelled") == cancelled + 2
    with connect(app.config["SETTINGS"].db_path) as conn:
        assert conn.execute("SELECT COUNT(*) FROM broadcast_recipients").fetchone()[0] == 5


def test_uploads_are_counted_clean_or_by_reason(bot):
    clean, empty = (counted("botsvc_uploads_total", result=result)
                    for result in ("clean", "empty_file"))
    tools = counted("botsvc_media_tool_duration_seconds_count", tool="clamav")
    answer = bot.call("uploadFile", data={"file": (io.BytesIO(b"hello, world\n"), "note.txt")},
                      content_type="multipart/form-data")
    assert answer.status_code == 200, answer.get_json()
    bot.call("uploadFile", data={"file": (io.BytesIO(b""), "empty.txt")},
             content_type="multipart/form-data")
    assert counted("botsvc_uploads_total", result="clean") == clean + 1
    assert counted("botsvc_uploads_total", result="empty_file") == empty + 1
    assert counted("botsvc_media_tool_duration_seconds_count", tool="clamav") > tools


def test_the_database_gauges_are_read_at_scrape_time(app, client, bot, chat, operator):
    first = scrape(client)
    pending = first["botsvc_updates_pending"][frozenset()]
    operator("userSendMessage", user_id=chat.user_id, bot_id=bot.id, text="one more")
    second = scrape(client)
    assert second["botsvc_updates_pending"][frozenset()] == pending + 1
    db_path = Path(app.config["SETTINGS"].db_path)
    assert second["botsvc_db_size_bytes"][frozenset()] >= db_path.stat().st_size
    assert 0 < second["botsvc_disk_free_bytes"][frozenset()] == pytest.approx(
        shutil.disk_usage(db_path.parent).free, rel=0.05)


# -- X-Request-Id ------------------------------------------------------------------------

ROUTES = [("get", "/healthz"), ("get", "/readyz"), ("get", "/metrics"),
          ("get", "/openapi.json"), ("post", "/v2/getMe"), ("post", "/v2/noSuchMethod"),
          ("post", "/manage/v1/listBots"), ("get", "/download.php"), ("get", "/nowhere"),
          ("get", "/sandbox/")]


@pytest.mark.parametrize(("verb", "path"), ROUTES)
def test_every_route_echoes_a_well_formed_request_id(client, verb, path):
    for presented in ("abc", "A.b_c:d-9", "x" * 128):
        response = getattr(client, verb)(path, headers={"X-Request-Id": presented})
        assert response.headers["X-Request-Id"] == presented


@pytest.mark.parametrize(("verb", "path"), ROUTES)
def test_every_route_replaces_a_missing_or_malformed_request_id(client, verb, path):
    seen = set()
    for presented in (None, "", "x" * 129, "has space", "semi;colon", "é", "a/b"):
        headers = {} if presented is None else {"X-Request-Id": presented}
        given = getattr(client, verb)(path, headers=headers).headers["X-Request-Id"]
        assert re.fullmatch(r"[0-9a-f]{32}", given) and given != presented
        seen.add(given)
    assert len(seen) == 7   # a new one each time


def test_the_document_names_the_request_id_on_every_answer():
    for path, operations in document(True)["paths"].items():
        for verb, operation in operations.items():
            for status, answer in operation["responses"].items():
                assert "X-Request-Id" in answer.get("headers", {}), (path, verb, status)


def test_with_metrics_off_nothing_is_counted_and_the_route_is_gone(make_app):
    client = make_app(metrics_enabled=False, metrics_token=METRICS_TOKEN).test_client()
    created = Operator(client)("createBot", username="uncounted_bot")
    bot = BotClient(client, created["bot"], created["token"])
    before = counted("botsvc_api_requests_total", method="getMe", code="ok")
    bot.ok("getMe")
    assert counted("botsvc_api_requests_total", method="getMe", code="ok") == before
    assert_failure(client.get("/metrics", headers={"Authorization": f"Bearer {METRICS_TOKEN}"}),
                   404, "METHOD_NOT_FOUND")


# -- the background jobs' health ---------------------------------------------------------

def test_each_listed_job_shows_its_last_success_and_whether_it_is_stuck(app, client, db):
    run_job(app, "deliver_due_broadcasts")
    healthy = scrape(client)
    job = frozenset({("job", "deliver_due_broadcasts")})
    assert healthy["botsvc_job_last_success_timestamp_seconds"][job] > 0
    assert healthy["botsvc_job_stuck"][job] == 0 and healthy["botsvc_job_failing"][job] == 0
    # A job whose passes stopped an hour ago, and whose last pass failed.
    with db:
        db.execute("UPDATE job_runs SET last_success_at = last_success_at - 3600,"
                   " last_failure_at = last_success_at WHERE name = ?",
                   ("deliver_due_broadcasts",))
    stopped = scrape(client)
    assert stopped["botsvc_job_stuck"][job] == 1 and stopped["botsvc_job_failing"][job] == 1
    listed = {dict(labels)["job"] for labels in stopped["botsvc_job_stuck"]}
    from botsvc.jobs.schedule import JOBS
    assert listed == {listed_job.name for listed_job in JOBS}
