"""The delivery worker against real local HTTPS receivers (trustme CA trusted
through webhook_ca_bundle, private addresses allowed, a substituted resolver
mapping the webhook's name to 127.0.0.1). The job is driven by hand."""
from __future__ import annotations

import json
import time

import pytest

from botsvc.devkit.receivers import hang, statuses
from botsvc.domain import webhooks
from botsvc.webhooks import delivery
from tests.webhooks.support import HOST, PUBLIC, SECRET, next_attempt_at, received_ids


@pytest.fixture
def app(make_app, ca_file):
    return make_app(webhook_allow_private=True, webhook_ca_bundle=ca_file)


def test_the_update_arrives_as_the_body_with_the_secret_header(bot, chat, operator, hook,
                                                               run_pass, clock):
    receiver = hook(bot)
    sent = operator("userSendMessage", user_id=chat.user_id, bot_id=bot.id, text="héllo ✓")
    bot.ok("deleteWebhook")            # the queue as polling sees it ...
    expected = bot.ok("getUpdates")
    bot.ok("setWebhook", url=receiver.url, secret_token=SECRET)   # ... is what arrives
    run_pass()

    assert [json.loads(r["body"]) for r in receiver.requests] == expected
    assert expected[1]["message"] == sent
    first, second = receiver.requests
    assert first["body"].startswith(b'{"update_id":%d,' % chat.update_id)   # no envelope
    assert second["path"] == "/hook"
    headers = second["headers"]
    assert headers["x-platform-bot-secret-token"] == SECRET
    assert headers["content-type"] == "application/json"
    assert headers["host"] == f"{HOST}:{receiver.port}"
    assert bot.ok("getWebhookInfo") == {"url": receiver.url, "pending_update_count": 0,
                                        "last_success_at": int(clock.now)}


def test_updates_go_out_one_at_a_time_in_update_id_order(bot, chat, operator, hook, run_pass,
                                                         clock):
    receiver = hook(bot)
    for i in range(6):
        operator("userSendMessage", user_id=chat.user_id, bot_id=bot.id, text=f"m{i}")
    run_pass()   # the first success chains the rest within the same pass
    assert received_ids(receiver) == list(range(chat.update_id, chat.update_id + 7))
    texts = [json.loads(r["body"])["message"]["text"] for r in receiver.requests]
    assert texts == ["/start"] + [f"m{i}" for i in range(6)]
    assert bot.ok("getWebhookInfo")["pending_update_count"] == 0


def test_delivered_updates_leave_the_queue(bot, chat, hook, run_pass, clock):
    hook(bot)
    run_pass()
    bot.ok("deleteWebhook")
    assert bot.ok("getUpdates") == []


@pytest.mark.parametrize("code", [200, 201, 202, 204, 299])
def test_any_2xx_delivers(bot, chat, hook, run_pass, clock, code):
    hook(bot, statuses(code))
    run_pass()
    assert bot.ok("getWebhookInfo")["pending_update_count"] == 0


@pytest.mark.parametrize("code, error", [
    (301, "redirect not followed (HTTP 301)"), (304, "redirect not followed (HTTP 304)"),
    (400, "HTTP 400"), (404, "HTTP 404"), (429, "HTTP 429"), (500, "HTTP 500"),
    (503, "HTTP 503"), (100, None),
])
def test_anything_else_is_a_failure_with_last_error(bot, chat, hook, run_pass, clock, code,
                                                    error):
    receiver = hook(bot, statuses(code) if code != 100 else _interim_then_close)
    run_pass()
    assert len(receiver.requests) == 1
    info = bot.ok("getWebhookInfo")
    assert info["pending_update_count"] == 1
    assert info["last_error_at"] == int(clock.now)
    assert "last_success_at" not in info
    if error:
        assert info["last_error"] == error


def _interim_then_close(handler):
    handler.wfile.write(b"HTTP/1.1 100 Continue\r\n\r\n")
    handler.close_connection = True


def test_failures_are_retried_at_growing_intervals(bot, chat, hook, run_pass, clock, app):
    receiver = hook(bot, statuses(500))
    run_pass()
    assert len(receiver.requests) == 1
    waits = []
    for attempt in range(2, 8):
        failed_at = clock.now
        due = next_attempt_at(app, bot.id)
        waits.append(due - failed_at)
        run_pass()                       # not due yet: nothing is sent
        clock.advance(due - clock.now - 0.05)
        run_pass()
        assert len(receiver.requests) == attempt - 1
        clock.advance(0.05)              # due now: retried
        run_pass()
        assert len(receiver.requests) == attempt
        assert bot.ok("getWebhookInfo")["last_error_at"] == int(clock.now)
    # 1, 2, 4, 8, 16, 32 s, each less up to 20 % of jitter.
    for n, wait in enumerate(waits):
        assert 0.8 * 2 ** n <= wait <= 2 ** n
    assert all(later > earlier for earlier, later in zip(waits, waits[1:], strict=False))
    assert received_ids(receiver) == [chat.update_id] * 7


def test_retry_delay_doubles_from_one_second_and_caps_at_ten_minutes():
    assert webhooks.retry_delay(1, rand=lambda: 0.0) == 1.0
    assert webhooks.retry_delay(2, rand=lambda: 0.0) == 2.0
    assert webhooks.retry_delay(10, rand=lambda: 0.0) == 512.0
    assert webhooks.retry_delay(11, rand=lambda: 0.0) == 600.0
    assert webhooks.retry_delay(10_000, rand=lambda: 0.0) == 600.0
    assert webhooks.retry_delay(10_000, rand=lambda: 1.0) == 480.0
    assert webhooks.retry_delay(3, rand=lambda: 0.5) == 3.6
    spread = {webhooks.retry_delay(5) for _ in range(50)}
    assert len(spread) > 1 and all(12.8 <= d <= 16.0 for d in spread)


def test_success_after_failures(bot, chat, operator, hook, run_pass, clock):
    receiver = hook(bot, statuses(500, 503, 200))
    operator("userSendMessage", user_id=chat.user_id, bot_id=bot.id, text="second")
    run_pass()
    clock.advance(1)
    run_pass()
    failed = bot.ok("getWebhookInfo")
    assert failed["last_error"] == "HTTP 503" and failed["pending_update_count"] == 2
    clock.advance(2)
    run_pass()   # the head succeeds, and the next update follows at once
    assert received_ids(receiver) == [chat.update_id] * 3 + [chat.update_id + 1]
    info = bot.ok("getWebhookInfo")
    assert info["pending_update_count"] == 0
    assert info["last_success_at"] == int(clock.now)
    # The last error stays on record; last_success_at shows it was overcome.
    assert info["last_error"] == "HTTP 503" and info["last_error_at"] <= info["last_success_at"]
    # Backoff is over: a new update goes out without waiting.
    operator("userSendMessage", user_id=chat.user_id, bot_id=bot.id, text="third")
    run_pass()
    assert len(receiver.requests) == 5


def test_a_redirect_is_not_followed(bot, chat, hook, make_receiver, answer, run_pass, clock,
                                    connections):
    target = make_receiver(cert_for=HOST)
    redirector = hook(bot, answer(302, headers={
        "Location": f"https://{HOST}:{target.port}/elsewhere"}))
    run_pass()
    assert len(redirector.requests) == 1 and target.requests == []
    assert connections == [("127.0.0.1", redirector.port)]
    info = bot.ok("getWebhookInfo")
    assert info["last_error"] == "redirect not followed (HTTP 302)"
    assert info["pending_update_count"] == 1


def test_a_receiver_that_hangs_times_out_and_is_retried(bot, chat, hook, run_pass, clock,
                                                        monkeypatch):
    monkeypatch.setattr(delivery, "ATTEMPT_TIMEOUT", 0.3)
    receiver = hook(bot, hang)
    started = time.monotonic()
    run_pass()
    assert time.monotonic() - started < 3
    assert len(receiver.requests) == 1
    info = bot.ok("getWebhookInfo")
    assert info["last_error"] == "no response within 0.3 s"
    assert info["pending_update_count"] == 1
    receiver.respond = statuses(200)
    clock.advance(1)
    run_pass()
    assert bot.ok("getWebhookInfo")["pending_update_count"] == 0


def test_certificate_for_another_name_is_a_failure(bot, chat, local_dns, make_receiver,
                                                   run_pass, clock):
    receiver = make_receiver(cert_for="other.botsvc-ci.net")
    bot.ok("setWebhook", url=f"https://{HOST}:{receiver.port}/", secret_token=SECRET)
    run_pass()
    assert receiver.requests == []
    assert bot.ok("getWebhookInfo")["last_error"] == f"TLS certificate verification failed for {HOST}"


class TestWithoutTheExtraCa:
    @pytest.fixture
    def app(self, make_app):
        return make_app(webhook_allow_private=True)   # certifi's bundle alone

    def test_the_test_certificate_is_refused(self, bot, chat, hook, run_pass, clock):
        receiver = hook(bot)
        run_pass()
        assert receiver.requests == []
        assert bot.ok("getWebhookInfo")["last_error"] == \
            f"TLS certificate verification failed for {HOST}"


def test_setting_the_webhook_again_clears_the_record_and_the_backoff(bot, chat, hook, run_pass,
                                                                     clock):
    receiver = hook(bot, statuses(500))
    run_pass()
    assert "last_error" in bot.ok("getWebhookInfo")
    receiver.respond = statuses(200)
    bot.ok("setWebhook", url=receiver.url, secret_token=SECRET)
    assert bot.ok("getWebhookInfo") == {"url": receiver.url, "pending_update_count": 1}
    run_pass()                           # no waiting out the old backoff
    assert len(receiver.requests) == 2
    assert bot.ok("getWebhookInfo")["pending_update_count"] == 0


def test_delete_webhook_forgets_the_record(bot, chat, hook, run_pass, clock):
    hook(bot, statuses(500))
    run_pass()
    bot.ok("deleteWebhook")
    assert bot.ok("getWebhookInfo") == {"url": "", "pending_update_count": 1}


def test_updates_older_than_a_day_are_not_delivered(bot, chat, hook, run_pass, clock):
    receiver = hook(bot)
    clock.advance(24 * 3600 + 1)
    run_pass()
    assert receiver.requests == []
    assert bot.ok("getWebhookInfo")["pending_update_count"] == 0


def test_nothing_is_delivered_while_the_bot_is_disabled(bot, chat, operator, hook, run_pass,
                                                       clock):
    receiver = hook(bot)
    operator("setBotDisabled", bot_id=bot.id, disabled=True)
    run_pass()
    assert receiver.requests == []
    operator("setBotDisabled", bot_id=bot.id, disabled=False)
    run_pass()
    assert received_ids(receiver) == [chat.update_id]


def test_nothing_is_delivered_while_the_platform_is_disabled(bot, chat, operator, hook,
                                                            run_pass, clock):
    receiver = hook(bot)
    operator("setPlatformDisabled", disabled=True)
    run_pass()
    assert receiver.requests == []
    operator("setPlatformDisabled", disabled=False)
    run_pass()
    assert received_ids(receiver) == [chat.update_id]


def test_polling_bots_are_left_alone(bot, chat, run_pass, clock):
    run_pass()
    assert len(bot.ok("getUpdates")) == 1


class TestRebinding:
    """Public mode: the name passed setWebhook with a public address; at delivery
    it answers loopback. Nothing may be contacted."""

    @pytest.fixture
    def app(self, make_app, ca_file):
        return make_app(webhook_ca_bundle=ca_file)

    @pytest.mark.parametrize("rebound", [["127.0.0.1"], [PUBLIC, "127.0.0.1"], ["10.0.0.7"],
                                         ["::ffff:127.0.0.1"], ["169.254.169.254"]])
    def test_dns_rebinding_is_refused_at_delivery(self, bot, chat, monkeypatch, fake_resolver,
                                                  run_pass, clock, connections, rebound):
        resolver = fake_resolver({HOST: [PUBLIC]}, {HOST: rebound})
        monkeypatch.setattr(delivery, "resolver", resolver)
        bot.ok("setWebhook", url=f"https://{HOST}/hook", secret_token=SECRET)
        run_pass()
        assert resolver.calls == [(HOST, 443), (HOST, 443)]   # resolved again to deliver
        assert connections == []
        info = bot.ok("getWebhookInfo")
        assert info["last_error"] == (f"the host name {HOST} resolves to an address that is "
                                      "not publicly routable")
        assert info["pending_update_count"] == 1

    def test_a_name_that_stops_resolving_is_a_failure(self, bot, chat, monkeypatch,
                                                      fake_resolver, run_pass, clock,
                                                      connections):
        monkeypatch.setattr(delivery, "resolver", fake_resolver({HOST: [PUBLIC]}, {}))
        bot.ok("setWebhook", url=f"https://{HOST}/hook", secret_token=SECRET)
        run_pass()
        assert connections == []
        assert bot.ok("getWebhookInfo")["last_error"] == \
            f"the host name {HOST} could not be resolved"
