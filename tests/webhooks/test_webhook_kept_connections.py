"""Connections to receivers kept between deliveries (app/botsvc/webhooks/connections.py),
against real local HTTPS receivers that count the TCP connections they accept
and see close. The name is resolved again at every delivery by a substituted
resolver, so a test can move it (to another loopback address, or to one that
may not be used) between two deliveries of a kept connection."""
from __future__ import annotations

import contextlib
import sqlite3
import time

import pytest

from botsvc.db import thread_connection
from botsvc.domain import webhooks
from botsvc.webhooks import connections, delivery
from tests.webhooks.support import HOST, SECRET, received_ids


@pytest.fixture
def app(make_app, ca_file):
    return make_app(webhook_allow_private=True, webhook_ca_bundle=ca_file)


def say(operator, chat, bot, count: int) -> None:
    for i in range(count):
        operator("userSendMessage", user_id=chat.user_id, bot_id=bot.id, text=f"m{i}")


def kept(app) -> connections.KeptConnections:
    return delivery.deliverer_for(app.config["SETTINGS"]).kept


def wait_for(condition, timeout: float = 5.0) -> None:
    deadline = time.monotonic() + timeout
    while not condition():
        assert time.monotonic() < deadline, "timed out"
        time.sleep(0.01)


def test_one_connection_carries_the_bots_deliveries(app, bot, chat, operator, hook, run_pass,
                                                    clock):
    receiver = hook(bot)
    run_pass()
    say(operator, chat, bot, 5)
    run_pass()
    say(operator, chat, bot, 3)
    run_pass()
    assert received_ids(receiver) == list(range(chat.update_id, chat.update_id + 9))
    assert receiver.connections == 1
    assert len({r["connection"] for r in receiver.requests}) == 1
    assert receiver.sni == [HOST]            # one handshake, for the name
    assert len(kept(app)) == 1


def test_each_bot_has_its_own_connection(app, new_bot, start_chat, operator, hook, run_pass,
                                         clock):
    bots = [new_bot() for _ in range(3)]
    receivers = []
    for bot in bots:
        start_chat(bot)
        receivers.append(hook(bot))
    run_pass()
    run_pass()
    assert [r.connections for r in receivers] == [1, 1, 1]
    assert len(kept(app)) == 3


def test_a_new_address_gets_a_new_connection_and_the_old_one_is_closed(
        app, bot, chat, operator, make_receiver, local_dns, fake_resolver, monkeypatch,
        run_pass, clock):
    first = make_receiver(cert_for=HOST)
    second = make_receiver(cert_for=HOST, host="127.0.0.2", port=first.port)
    url = f"https://{HOST}:{first.port}/hook"
    resolver = fake_resolver({HOST: ["127.0.0.1"]}, {HOST: ["127.0.0.1"]},
                             {HOST: ["127.0.0.2"]})
    monkeypatch.setattr(delivery, "resolver", resolver)
    bot.ok("setWebhook", url=url, secret_token=SECRET)   # resolved for the check, once
    run_pass()                                            # the /start, to 127.0.0.1
    say(operator, chat, bot, 2)
    run_pass()                                            # the name now answers 127.0.0.2
    assert received_ids(first) == [chat.update_id]
    assert received_ids(second) == [chat.update_id + 1, chat.update_id + 2]
    assert (first.connections, second.connections) == (1, 1)
    wait_for(lambda: first.closed == 1)                   # not left open beside the new one
    assert second.closed == 0


def test_a_new_url_gets_a_new_connection(app, bot, chat, operator, hook, run_pass, clock):
    receiver = hook(bot)
    run_pass()
    bot.ok("setWebhook", url=receiver.url + "/moved", secret_token=SECRET)
    say(operator, chat, bot, 2)
    run_pass()
    assert [r["path"] for r in receiver.requests] == ["/hook", "/hook/moved", "/hook/moved"]
    assert receiver.connections == 2
    wait_for(lambda: receiver.closed == 1)


def test_the_same_url_set_again_gets_a_new_connection(app, bot, chat, operator, hook,
                                                      run_pass, clock):
    receiver = hook(bot)
    run_pass()
    bot.ok("setWebhook", url=receiver.url, secret_token=SECRET)   # a new configuration
    say(operator, chat, bot, 1)
    run_pass()
    assert receiver.connections == 2


@pytest.mark.parametrize("answers", [["169.254.169.254"], ["127.0.0.1", "169.254.169.254"],
                                     ["0.0.0.0"], ["::ffff:169.254.169.254"]])
def test_a_name_that_now_resolves_to_a_forbidden_address_is_refused_with_a_kept_connection(
        app, bot, chat, operator, make_receiver, fake_resolver, monkeypatch, run_pass, clock,
        answers):
    receiver = make_receiver(cert_for=HOST)
    url = f"https://{HOST}:{receiver.port}/hook"
    resolver = fake_resolver({HOST: ["127.0.0.1"]}, {HOST: ["127.0.0.1"]}, {HOST: answers})
    monkeypatch.setattr(delivery, "resolver", resolver)
    bot.ok("setWebhook", url=url, secret_token=SECRET)
    run_pass()
    assert len(kept(app)) == 1
    say(operator, chat, bot, 1)
    run_pass()
    assert received_ids(receiver) == [chat.update_id]     # nothing more went out
    assert len(resolver.calls) == 3                        # resolved again to deliver
    info = bot.ok("getWebhookInfo")
    assert info["last_error"] == (f"the host name {HOST} resolves to an address that is not "
                                  "publicly routable")
    assert info["pending_update_count"] == 1
    assert len(kept(app)) == 0
    wait_for(lambda: receiver.closed == 1)


def test_an_idle_connection_is_closed(app, bot, chat, operator, hook, run_pass, clock,
                                      monkeypatch):
    monkeypatch.setattr(connections, "IDLE_SECONDS", 0.3)
    receiver = hook(bot)
    run_pass()
    time.sleep(0.4)
    run_pass()                          # a pass with nothing to deliver closes it
    assert len(kept(app)) == 0
    wait_for(lambda: receiver.closed == 1)
    say(operator, chat, bot, 1)
    run_pass()
    assert receiver.connections == 2


def test_a_connection_the_receiver_closed_is_replaced(app, bot, chat, operator, hook,
                                                      run_pass, clock):
    def answer_then_hang_up(handler):
        handler.send_response(200)
        handler.send_header("Content-Length", "0")
        handler.end_headers()
        handler.close_connection = True   # without saying so in the answer

    receiver = hook(bot, answer_then_hang_up)
    run_pass()
    wait_for(lambda: receiver.closed == 1)
    say(operator, chat, bot, 3)
    run_pass()
    assert received_ids(receiver) == list(range(chat.update_id, chat.update_id + 4))
    assert receiver.connections == 4
    assert "last_error" not in bot.ok("getWebhookInfo")


def test_a_connection_closed_just_before_use_is_replaced_within_the_attempt(
        app, bot, chat, operator, hook, run_pass, clock, monkeypatch):
    """The receiver hangs up between our check and our request (here: the
    check is made to miss it): the request fails before any answer and goes
    out once more on a new connection, within the same attempt."""
    def answer_then_hang_up(handler):
        handler.send_response(200)
        handler.send_header("Content-Length", "0")
        handler.end_headers()
        handler.close_connection = True

    monkeypatch.setattr(connections.PinnedConnection, "usable",
                        lambda self, now: self.conn.sock is not None)
    receiver = hook(bot, answer_then_hang_up)
    run_pass()
    wait_for(lambda: receiver.closed == 1)
    say(operator, chat, bot, 2)
    run_pass()
    assert received_ids(receiver) == list(range(chat.update_id, chat.update_id + 3))
    assert receiver.connections == 3
    info = bot.ok("getWebhookInfo")
    assert "last_error" not in info and info["pending_update_count"] == 0
    with contextlib.closing(sqlite3.connect(app.config["SETTINGS"].db_path)) as db:
        records = db.execute("SELECT attempt, http_status FROM webhook_deliveries").fetchall()
    assert records == [(1, 200)] * 3      # one attempt each, the retry inside it


def test_a_receiver_that_asks_to_close_gets_a_new_connection_each_time(
        app, bot, chat, operator, hook, answer, run_pass, clock):
    receiver = hook(bot, answer(200, headers={"Connection": "close"}))
    say(operator, chat, bot, 2)
    run_pass()
    assert len(receiver.requests) == 3
    assert receiver.connections == 3
    assert len(kept(app)) == 0


def test_a_failed_attempt_does_not_keep_its_connection(app, bot, chat, hook, answer,
                                                       monkeypatch, run_pass, clock):
    monkeypatch.setattr(delivery, "ATTEMPT_TIMEOUT", 0.3)

    def too_slow(handler):
        time.sleep(0.6)   # twice the attempt's timeout
        answer(200)(handler)

    receiver = hook(bot, too_slow)
    run_pass()
    assert bot.ok("getWebhookInfo")["last_error"] == "no response within 0.3 s"
    assert len(kept(app)) == 0
    wait_for(lambda: receiver.closed == 1)


def test_outcomes_recorded_together_are_recorded_one_by_one_when_together_fails(
        app, new_bot, start_chat, hook, run_pass, monkeypatch, clock):
    """Several bots' outcomes share a transaction; if it fails, each is
    recorded alone, so one bad outcome cannot lose the others."""
    real = webhooks.record_attempts
    sizes = []

    def fails_together(conn, outcomes, *args, **kwargs):
        sizes.append(len(outcomes))
        if len(outcomes) > 1:
            raise RuntimeError("together")
        return real(conn, outcomes, *args, **kwargs)

    monkeypatch.setattr(webhooks, "record_attempts", fails_together)
    recorder = delivery.GroupCommit()
    bots = [new_bot() for _ in range(3)]
    for bot in bots:
        start_chat(bot)
        hook(bot)
    conn = thread_connection(app.config["SETTINGS"].db_path)
    claims = webhooks.claim_due(conn, clock.now, 10, delivery.LEASE_SECONDS)
    outcomes = [webhooks.Outcome(claim, True) for claim in claims]
    recorder._commit(conn, [delivery._Entry(outcome) for outcome in outcomes])
    assert sizes == [3, 1, 1, 1]
    assert all(bot.ok("getWebhookInfo")["pending_update_count"] == 0 for bot in bots)
