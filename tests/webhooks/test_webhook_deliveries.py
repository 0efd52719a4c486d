"""getWebhookDeliveries: every delivery attempt recorded when
it finishes, newest first, paginated, kept 24 hours; always available."""
from __future__ import annotations

import pytest

from botsvc.db import thread_connection
from botsvc.devkit.receivers import answer, statuses
from botsvc.domain import installation, webhooks
from botsvc.jobs import run_job
from botsvc.webhooks import delivery
from tests.support.contract import assert_invalid
from tests.webhooks.support import HOST, SECRET


@pytest.fixture
def app(make_app, ca_file):
    return make_app(webhook_allow_private=True, webhook_ca_bundle=ca_file)


def deliveries(operator, bot, **params):
    return operator("getWebhookDeliveries", bot_id=bot.id, **params)


def test_a_success_is_recorded(bot, chat, operator, hook, run_pass, clock):
    assert deliveries(operator, bot) == {"deliveries": [], "next_cursor": None}
    hook(bot)
    run_pass()
    [record] = deliveries(operator, bot)["deliveries"]
    assert set(record) == {"update_id", "attempt", "started_at", "duration_ms", "http_status"}
    assert record["update_id"] == chat.update_id and record["attempt"] == 1
    assert record["started_at"] == int(clock.now) and record["http_status"] == 200
    assert type(record["duration_ms"]) is int and record["duration_ms"] >= 0


def test_failures_and_retries_are_numbered_newest_first(bot, chat, operator, hook, run_pass,
                                                        clock):
    hook(bot, statuses(500, 302, 200))
    run_pass()
    clock.advance(1)
    run_pass()
    clock.advance(2)
    run_pass()
    records = deliveries(operator, bot)["deliveries"]
    assert [(r["attempt"], r.get("http_status"), r.get("error")) for r in records] == [
        (3, 200, None), (2, 302, "redirect not followed (HTTP 302)"), (1, 500, "HTTP 500")]
    assert {r["update_id"] for r in records} == {chat.update_id}
    assert records[0]["started_at"] == int(clock.now)


def test_an_attempt_without_an_answer_names_only_what_the_bot_configured(
        bot, chat, operator, local_dns, dead_port, run_pass, clock):
    bot.ok("setWebhook", url=f"https://{HOST}:{dead_port}/hook", secret_token=SECRET)
    run_pass()
    [record] = deliveries(operator, bot)["deliveries"]
    assert "http_status" not in record
    assert record["error"] == f"could not connect to {HOST}:{dead_port}: connection refused"
    assert "127.0.0.1" not in record["error"]       # the resolved address stays private


def test_pages_of_records(bot, chat, operator, hook, run_pass, clock, new_bot):
    hook(bot, statuses(500))
    for _ in range(5):
        run_pass()
        clock.advance(600)
    everything = deliveries(operator, bot)["deliveries"]
    assert [r["attempt"] for r in everything] == [5, 4, 3, 2, 1]
    first = deliveries(operator, bot, limit=2)
    assert first["deliveries"] == everything[:2] and first["next_cursor"]
    second = deliveries(operator, bot, limit=2, cursor=first["next_cursor"])
    assert second["deliveries"] == everything[2:4]
    last = deliveries(operator, bot, limit=2, cursor=second["next_cursor"])
    assert last == {"deliveries": everything[4:], "next_cursor": None}
    exact = deliveries(operator, bot, limit=5)
    assert exact == {"deliveries": everything, "next_cursor": None}
    other = new_bot()
    assert_invalid(operator.call("getWebhookDeliveries", bot_id=other.id,
                                 cursor=first["next_cursor"]), "cursor")


@pytest.mark.parametrize("params, field", [
    ({}, "bot_id"), ({"bot_id": 999}, "bot_id"), ({"bot_id": "1"}, "bot_id"),
    ({"limit": 0}, "limit"), ({"limit": 101}, "limit"), ({"limit": "5"}, "limit"),
    ({"cursor": "not-a-cursor"}, "cursor"), ({"cursor": ""}, "cursor"), ({"page": 2}, "page"),
])
def test_parameters(operator, bot, params, field):
    params = {"bot_id": bot.id, **params} if field != "bot_id" else params
    assert_invalid(operator.call("getWebhookDeliveries", **params), field)


def test_limit_bounds_are_accepted(operator, bot):
    for limit in (1, 100):
        assert deliveries(operator, bot, limit=limit, cursor=None)["deliveries"] == []


def test_records_are_kept_24_hours(app, bot, chat, operator, hook, run_pass, clock):
    hook(bot)
    run_pass()
    clock.advance(24 * 3600)
    assert len(deliveries(operator, bot)["deliveries"]) == 1
    clock.advance(1)
    assert deliveries(operator, bot)["deliveries"] == []
    run_job(app, "delete_expired_records")
    conn = thread_connection(app.config["SETTINGS"].db_path)
    assert conn.execute("SELECT COUNT(*) FROM webhook_deliveries").fetchone()[0] == 0


def test_an_attempt_that_finishes_after_a_reset_records_nothing(app, bot, chat, hook, clock):
    hook(bot, answer(200))
    conn = thread_connection(app.config["SETTINGS"].db_path)
    [in_flight] = webhooks.claim_due(conn, clock.now, 10, delivery.LEASE_SECONDS)
    installation.reset_installation(conn, app.config["SETTINGS"].data_dir)
    attempt = webhooks.Attempt(int(clock.now), 12, 200)
    assert webhooks.record_attempt(conn, in_flight, True, None, clock.now,
                                   delivery.LEASE_SECONDS, attempt=attempt) is None
    assert conn.execute("SELECT COUNT(*) FROM webhook_deliveries").fetchone()[0] == 0
