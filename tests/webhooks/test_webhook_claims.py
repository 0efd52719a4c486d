"""Claims and leases: several deliverers at once never deliver one update
twice at the same time, a dead claimer's lease expires, one slow receiver
does not hold up other bots, and a new update wakes delivery at once."""
from __future__ import annotations

import collections
import threading
import time

import pytest

from botsvc.db import thread_connection
from botsvc.devkit.receivers import hold, statuses
from botsvc.domain import webhooks
from botsvc.jobs import DELIVER_WEBHOOKS, Job, scheduler
from botsvc.webhooks import delivery
from botsvc.webhooks.delivery import deliver_due_webhooks
from tests.webhooks.support import HOST, SECRET, received_ids


@pytest.fixture
def app(make_app, ca_file):
    return make_app(webhook_allow_private=True, webhook_ca_bundle=ca_file)


def send_messages(operator, bot, user_id, count):
    for i in range(count):
        operator("userSendMessage", user_id=user_id, bot_id=bot.id, text=f"message {i}")


def test_two_deliverers_at_once_deliver_each_update_exactly_once_in_order(
        app, new_bot, start_chat, operator, hook, local_dns):
    """Two Deliverers stand for two gunicorn workers: separate slots and pools,
    one database. Each keeps running passes from its own thread."""
    in_flight: collections.Counter = collections.Counter()
    overlaps = []
    lock = threading.Lock()

    def slow_ok(handler):
        path = handler.path
        with lock:
            in_flight[path] += 1
            if in_flight[path] > 1:
                overlaps.append(path)
        time.sleep(0.01)
        with lock:
            in_flight[path] -= 1
        statuses(200)(handler)

    bots = [new_bot() for _ in range(3)]
    receivers = {}
    for bot in bots:
        chat = start_chat(bot)
        receivers[bot.id] = hook(bot, slow_ok, path=f"/hook/{bot.id}")
        send_messages(operator, bot, chat.user_id, 12)
    settings = app.config["SETTINGS"]
    deliverers = [delivery.Deliverer(settings, slots=2) for _ in range(2)]
    stop = threading.Event()

    def keep_passing(deliverer):
        conn = thread_connection(settings.db_path)
        while not stop.is_set():
            deliverer.run_pass(conn)
            time.sleep(0.002)

    threads = [threading.Thread(target=keep_passing, args=(d,)) for d in deliverers]
    for thread in threads:
        thread.start()
    deadline = time.monotonic() + 30
    while time.monotonic() < deadline and any(
            bot.ok("getWebhookInfo")["pending_update_count"] for bot in bots):
        time.sleep(0.05)
    stop.set()
    for thread in threads:
        thread.join()
    for deliverer in deliverers:
        assert deliverer.wait_idle(10)
        deliverer.shutdown()

    for bot in bots:
        ids = received_ids(receivers[bot.id])
        assert len(ids) == 13 and ids == sorted(set(ids)), ids
        assert bot.ok("getWebhookInfo")["pending_update_count"] == 0
    assert overlaps == []


def test_a_dead_claimers_lease_expires_and_its_late_report_is_ignored(
        app, bot, chat, hook, run_pass, clock):
    receiver = hook(bot)
    conn = thread_connection(app.config["SETTINGS"].db_path)
    [dead] = webhooks.claim_due(conn, clock.now, 10, delivery.LEASE_SECONDS)
    assert dead.update_id == chat.update_id
    run_pass()
    assert receiver.requests == []                   # leased by the "dead" process
    clock.advance(delivery.LEASE_SECONDS - 1)
    run_pass()
    assert receiver.requests == []
    clock.advance(1)
    run_pass()
    assert received_ids(receiver) == [chat.update_id]
    # The dead process wakes up late with a failure: nothing changes.
    assert webhooks.record_attempt(conn, dead, False, "HTTP 500", clock.now,
                                   delivery.LEASE_SECONDS) is None
    info = bot.ok("getWebhookInfo")
    assert "last_error" not in info and info["pending_update_count"] == 0


def test_an_attempt_in_flight_keeps_its_lease_across_set_webhook(
        app, bot, chat, hook, run_pass, clock):
    old = hook(bot)
    conn = thread_connection(app.config["SETTINGS"].db_path)
    [in_flight] = webhooks.claim_due(conn, clock.now, 10, delivery.LEASE_SECONDS)
    new = hook(bot, path="/new")
    run_pass()
    assert new.requests == []   # no second delivery of the head beside the first
    # The old attempt fails late: the new webhook is not put into backoff.
    assert webhooks.record_attempt(conn, in_flight, False, "HTTP 500", clock.now,
                                   delivery.LEASE_SECONDS) is None
    assert bot.ok("getWebhookInfo") == {"url": new.url, "pending_update_count": 1}
    run_pass()
    assert received_ids(new) == [chat.update_id] and old.requests == []


def test_an_old_attempt_that_succeeds_counts_as_delivered(app, bot, chat, hook, clock):
    hook(bot)
    conn = thread_connection(app.config["SETTINGS"].db_path)
    [in_flight] = webhooks.claim_due(conn, clock.now, 10, delivery.LEASE_SECONDS)
    bot.ok("deleteWebhook")
    assert webhooks.record_attempt(conn, in_flight, True, None, clock.now,
                                   delivery.LEASE_SECONDS) is None
    assert bot.ok("getUpdates") == []     # the receiver has it; it is not polled again


def test_a_hanging_receiver_does_not_hold_up_other_bots(
        app, new_bot, start_chat, hook, monkeypatch, clock):
    monkeypatch.setattr(delivery, "ATTEMPT_TIMEOUT", 5.0)
    slow_bot, quick_bot = new_bot(), new_bot()
    start_chat(slow_bot)
    start_chat(quick_bot)
    slow = hook(slow_bot, hold)
    quick = hook(quick_bot)
    settings = app.config["SETTINGS"]
    deliverer = delivery.Deliverer(settings, slots=4)
    try:
        assert deliverer.run_pass(thread_connection(settings.db_path)) == 2
        wait_for(lambda: len(quick.requests) == 1 and len(slow.requests) == 1, timeout=2)
        wait_for(lambda: quick_bot.ok("getWebhookInfo")["pending_update_count"] == 0, 2)
        assert deliverer.wait_idle(0.2) is False          # the slow one is still waiting
        slow.release.set()
        assert deliverer.wait_idle(10)
    finally:
        deliverer.shutdown()
    assert slow_bot.ok("getWebhookInfo")["pending_update_count"] == 0


def test_claims_stop_at_the_free_slots(app, new_bot, start_chat, hook, monkeypatch, clock):
    monkeypatch.setattr(delivery, "ATTEMPT_TIMEOUT", 5.0)
    bots = [new_bot() for _ in range(3)]
    receivers = []
    for bot in bots:
        start_chat(bot)
        receivers.append(hook(bot, hold))
    settings = app.config["SETTINGS"]
    conn = thread_connection(settings.db_path)
    deliverer = delivery.Deliverer(settings, slots=2)
    try:
        assert deliverer.run_pass(conn) == 2
        assert deliverer.run_pass(conn) == 0     # both slots busy: nothing more is leased
        assert len(webhooks.claim_due(conn, clock.now, 10, delivery.LEASE_SECONDS)) == 1
    finally:
        for receiver in receivers:
            receiver.release.set()
        deliverer.shutdown()


class TestWakeUp:
    """With the process's scheduler running and its tick slowed to a minute,
    only the wake-up from the recorded update can explain a prompt delivery."""

    @pytest.fixture
    def running_worker(self, app, monkeypatch):
        slow_tick = Job(DELIVER_WEBHOOKS, 60.0, run=deliver_due_webhooks)
        started = scheduler.start_worker(app, [slow_tick])
        yield started
        started.shutdown()
        delivery.forget_deliverer(app.config["SETTINGS"])
        monkeypatch.setattr(scheduler, "_worker", None)

    def test_a_new_update_is_delivered_at_once(self, bot, chat, operator, hook, running_worker):
        receiver = hook(bot)      # setWebhook wakes delivery too: the /start goes out
        wait_for(lambda: len(receiver.requests) == 1)
        for i in range(5):
            started = time.monotonic()
            operator("userSendMessage", user_id=chat.user_id, bot_id=bot.id, text=f"now {i}")
            wait_for(lambda i=i: len(receiver.requests) == i + 2)
            assert time.monotonic() - started < 1.0
        assert received_ids(receiver) == list(range(chat.update_id, chat.update_id + 6))


def wait_for(condition, timeout: float = 5.0) -> None:
    deadline = time.monotonic() + timeout
    while not condition():
        assert time.monotonic() < deadline, "timed out"
        time.sleep(0.005)


def test_secret_is_sent_but_never_logged(bot, chat, hook, run_pass, clock, caplog):
    caplog.set_level("DEBUG")
    receiver = hook(bot, statuses(500))
    run_pass()
    assert receiver.requests[0]["headers"]["x-platform-bot-secret-token"] == SECRET
    assert "failed: HTTP 500" in caplog.text
    assert SECRET not in caplog.text and receiver.url not in caplog.text and HOST in receiver.url
