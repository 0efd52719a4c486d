"""setWebhook, deleteWebhook, getWebhookInfo over /v2, and the exclusion of
polling while a webhook is set. DNS answers come from a substituted resolver."""
from __future__ import annotations

import sqlite3

import pytest

from botsvc.webhooks import delivery

URL = "https://hooks.botsvc-ci.net/telegram/hook"
SECRET = "Secret_token-0123456789"
PUBLIC = "93.184.216.34"


@pytest.fixture
def dns(monkeypatch, fake_resolver):
    """Substitute the resolver: dns({name: [addresses]}) returns the FakeResolver."""
    def install(*tables):
        resolver = fake_resolver(*tables)
        monkeypatch.setattr(delivery, "resolver", resolver)
        return resolver
    install({"hooks.botsvc-ci.net": [PUBLIC], "other.botsvc-ci.net": ["2606:2800:220:1::1"]})
    return install


def set_webhook(bot, url=URL, secret=SECRET, **extra):
    return bot.ok("setWebhook", url=url, secret_token=secret, **extra)


def queue_messages(operator, bot, user_id, *texts):
    for text in texts:
        operator("userSendMessage", user_id=user_id, bot_id=bot.id, text=text)


def test_set_webhook_answers_true_and_info_shows_it(bot, dns):
    assert set_webhook(bot) is True
    assert bot.ok("getWebhookInfo") == {"url": URL, "pending_update_count": 0}


def test_a_name_that_does_not_resolve_yet_is_accepted(bot, dns):
    # No outside DNS (an offline machine): accepted; delivery checks again.
    url = "https://nowhere.botsvc-ci.net/hook"
    assert set_webhook(bot, url=url) is True
    assert bot.ok("getWebhookInfo")["url"] == url


def test_info_without_a_webhook_has_an_empty_url(bot, chat):
    assert bot.ok("getWebhookInfo") == {"url": "", "pending_update_count": 1}


def test_info_counts_pending_updates(bot, chat, operator, dns):
    queue_messages(operator, bot, chat.user_id, "one", "two")
    set_webhook(bot)
    assert bot.ok("getWebhookInfo") == {"url": URL, "pending_update_count": 3}


def test_url_is_shown_as_given(bot, dns):
    set_webhook(bot, url="https://Hooks.Botsvc-CI.net:443/a?b=c")
    assert bot.ok("getWebhookInfo")["url"] == "https://Hooks.Botsvc-CI.net:443/a?b=c"


def test_ipv6_only_public_name_is_accepted(bot, dns):
    assert set_webhook(bot, url="https://other.botsvc-ci.net/") is True


@pytest.mark.parametrize("url, reason", [
    ("http://hooks.botsvc-ci.net/hook", "scheme"),
    ("https://hooks.botsvc-ci.net:8443/hook", "port"),
    ("https://user:pass@hooks.botsvc-ci.net/hook", "credentials"),
    ("https://hooks.botsvc-ci.net/hook#part", "fragment"),
    ("https://127.0.0.1/hook", "ip_literal"),
    ("https://[::1]/hook", "ip_literal"),
    ("https://2130706433/hook", "ip_literal"),
    ("https://localhost/hook", "reserved_name"),
    ("https://ⓛⓞⓒⓐⓛⓗⓞⓢⓣ/hook", "reserved_name"),
    ("https://private.botsvc-ci.net/hook", "non_public_address"),
    ("https://mixed.botsvc-ci.net/hook", "non_public_address"),
    ("https://metadata.botsvc-ci.net/hook", "non_public_address"),
    ("https://hooks.botsvc-ci.net/a\tb", "control_characters"),
    ("hooks.botsvc-ci.net/hook", "scheme"),
])
def test_bad_urls_are_invalid_parameter_url(bot, dns, url, reason):
    dns({"hooks.botsvc-ci.net": [PUBLIC], "private.botsvc-ci.net": ["10.1.2.3"],
         "mixed.botsvc-ci.net": [PUBLIC, "127.0.0.1"],
         "metadata.botsvc-ci.net": ["169.254.169.254"]})
    body = bot.error("setWebhook", 400, "INVALID_PARAMETER", url=url, secret_token=SECRET)
    assert body["parameters"] == {"field": "url", "reason": reason}
    assert bot.ok("getWebhookInfo")["url"] == ""


@pytest.mark.parametrize("url", [5, "", None, ["https://hooks.botsvc-ci.net/"]])
def test_url_of_the_wrong_type_is_invalid(bot, dns, url):
    body = bot.error("setWebhook", 400, "INVALID_PARAMETER", url=url, secret_token=SECRET)
    assert body["parameters"]["field"] == "url"


@pytest.mark.parametrize("secret", [
    "a" * 15, "a" * 257, "abcdefghijklmnop!", "abcdefghijklmnop\n", "abcdefgh ijklmnop",
    "ábcdefghijklmnop", "", 1234567890123456789,
])
def test_bad_secret_token_is_invalid_parameter_and_not_echoed(bot, dns, secret):
    body = bot.error("setWebhook", 400, "INVALID_PARAMETER", url=URL, secret_token=secret)
    assert body["parameters"] == {"field": "secret_token"}
    if isinstance(secret, str) and secret:
        assert secret not in body["description"]


@pytest.mark.parametrize("secret", ["a" * 16, "A-z_0-9" * 36 + "abcd"])
def test_secret_token_limits_are_inclusive(bot, dns, secret):
    assert len(secret) in (16, 256)
    assert set_webhook(bot, secret=secret) is True


def test_missing_parameters_name_their_field(bot, dns):
    body = bot.error("setWebhook", 400, "INVALID_PARAMETER", secret_token=SECRET)
    assert body["parameters"]["field"] == "url"
    body = bot.error("setWebhook", 400, "INVALID_PARAMETER", url=URL)
    assert body["parameters"]["field"] == "secret_token"


def test_parameters_are_strict(bot, dns):
    body = bot.error("setWebhook", 400, "INVALID_PARAMETER", url=URL, secret_token=SECRET,
                     drop_pending_updates="true")
    assert body["parameters"]["field"] == "drop_pending_updates"
    body = bot.error("setWebhook", 400, "INVALID_PARAMETER", url=URL, secret_token=SECRET,
                     max_connections=40)
    assert body["parameters"]["field"] == "max_connections"
    body = bot.error("deleteWebhook", 400, "INVALID_PARAMETER", drop_pending_updates=1)
    assert body["parameters"]["field"] == "drop_pending_updates"
    body = bot.error("getWebhookInfo", 400, "INVALID_PARAMETER", url=URL)
    assert body["parameters"]["field"] == "url"


def test_the_secret_is_never_returned(bot, dns, client):
    set_webhook(bot)
    for method in ("setWebhook", "getWebhookInfo", "deleteWebhook"):
        params = {"url": URL, "secret_token": SECRET} if method == "setWebhook" else {}
        response = bot.call(method, params)
        assert SECRET not in response.get_data(as_text=True)


def test_get_updates_is_refused_while_a_webhook_is_set(bot, chat, dns):
    set_webhook(bot)
    body = bot.error("getUpdates", 409, "WEBHOOK_ACTIVE")
    assert body["parameters"] == {}
    bot.error("getUpdates", 409, "WEBHOOK_ACTIVE", offset=chat.update_id + 1)


def test_get_updates_still_validates_first(bot, dns):
    set_webhook(bot)
    bot.error("getUpdates", 400, "INVALID_PARAMETER", offset=-1)


def test_delete_webhook_reenables_polling_and_keeps_updates(bot, chat, operator, dns):
    set_webhook(bot)
    queue_messages(operator, bot, chat.user_id, "while hooked")
    assert bot.ok("deleteWebhook") is True
    assert bot.ok("getWebhookInfo") == {"url": "", "pending_update_count": 2}
    got = bot.ok("getUpdates")
    assert [u["update_id"] for u in got] == [chat.update_id, chat.update_id + 1]
    assert got[1]["message"]["text"] == "while hooked"


def test_delete_webhook_without_one_is_true(bot, chat):
    assert bot.ok("deleteWebhook") is True
    assert bot.ok("deleteWebhook", drop_pending_updates=False) is True
    assert len(bot.ok("getUpdates")) == 1


def test_delete_webhook_can_drop_pending_updates(bot, chat, operator, dns):
    set_webhook(bot)
    queue_messages(operator, bot, chat.user_id, "a", "b")
    assert bot.ok("deleteWebhook", drop_pending_updates=True) is True
    assert bot.ok("getUpdates") == []
    queue_messages(operator, bot, chat.user_id, "after")
    assert [u["message"]["text"] for u in bot.ok("getUpdates")] == ["after"]


def test_delete_webhook_drop_pending_works_in_polling_mode_too(bot, chat):
    assert bot.ok("deleteWebhook", drop_pending_updates=True) is True
    assert bot.ok("getUpdates") == []


def test_set_webhook_can_drop_pending_updates(bot, chat, operator, dns):
    queue_messages(operator, bot, chat.user_id, "old")
    assert set_webhook(bot, drop_pending_updates=True) is True
    assert bot.ok("getWebhookInfo") == {"url": URL, "pending_update_count": 0}
    queue_messages(operator, bot, chat.user_id, "new")
    assert bot.ok("getWebhookInfo")["pending_update_count"] == 1


def test_set_webhook_keeps_pending_updates_by_default(bot, chat, operator, dns):
    queue_messages(operator, bot, chat.user_id, "kept")
    set_webhook(bot, drop_pending_updates=False)
    assert bot.ok("getWebhookInfo")["pending_update_count"] == 2


def test_a_rejected_set_webhook_changes_nothing(bot, chat, dns):
    set_webhook(bot)
    bot.error("setWebhook", 400, "INVALID_PARAMETER", url="https://localhost/",
              secret_token=SECRET, drop_pending_updates=True)
    assert bot.ok("getWebhookInfo") == {"url": URL, "pending_update_count": 1}


def test_setting_again_replaces_the_webhook(bot, dns):
    set_webhook(bot)
    set_webhook(bot, url="https://other.botsvc-ci.net/v2", secret="another_secret_value")
    assert bot.ok("getWebhookInfo") == {"url": "https://other.botsvc-ci.net/v2",
                                        "pending_update_count": 0}


def test_webhooks_are_per_bot(new_bot, start_chat, dns):
    hooked, polling = new_bot(), new_bot()
    start_chat(hooked)
    start_chat(polling)
    set_webhook(hooked)
    assert len(polling.ok("getUpdates")) == 1
    assert polling.ok("getWebhookInfo") == {"url": "", "pending_update_count": 1}
    hooked.error("getUpdates", 409, "WEBHOOK_ACTIVE")


def test_dns_lookup_runs_outside_the_write_transaction(bot, app, monkeypatch):
    """While setWebhook waits for DNS, another process can still write."""
    db_path = app.config["SETTINGS"].db_path
    writes_during_lookup = []

    def resolver(host, port):
        other = sqlite3.connect(db_path, timeout=0, isolation_level=None)
        try:
            other.execute("BEGIN IMMEDIATE")   # fails at once if the request holds the lock
            other.execute("ROLLBACK")
            writes_during_lookup.append(True)
        finally:
            other.close()
        return [PUBLIC]

    monkeypatch.setattr(delivery, "resolver", resolver)
    assert set_webhook(bot) is True
    assert writes_during_lookup == [True]


def test_idempotent_replay_of_set_webhook(bot, dns):
    headers = {"Idempotency-Key": "set-hook-1"}
    first = bot.call("setWebhook", {"url": URL, "secret_token": SECRET}, headers=headers)
    again = bot.call("setWebhook", {"url": URL, "secret_token": SECRET}, headers=headers)
    assert first.get_json() == again.get_json() == {"ok": True, "result": True}
    assert again.headers["Idempotent-Replayed"] == "true"


class TestPrivateMode:
    """BOTSVC_WEBHOOK_ALLOW_PRIVATE relaxes scheme, port and address only."""

    @pytest.fixture
    def app(self, make_app):
        return make_app(webhook_allow_private=True)

    @pytest.mark.parametrize("url", [
        "https://127.0.0.1:8443/hook", "http://127.0.0.1:8080/hook", "http://[::1]:9000/",
        "https://lan-box.botsvc-ci.net:8443/hook",
    ])
    def test_local_destinations_are_accepted(self, bot, dns, url):
        dns({"lan-box.botsvc-ci.net": ["192.168.1.20"]})
        assert set_webhook(bot, url=url) is True
        assert bot.ok("getWebhookInfo")["url"] == url

    @pytest.mark.parametrize("url, reason", [
        ("https://localhost:8443/hook", "reserved_name"),
        ("https://box.local/hook", "reserved_name"),
        ("https://127.1/hook", "ip_literal"),
        ("https://user:pw@127.0.0.1/hook", "credentials"),
        ("https://127.0.0.1/hook#x", "fragment"),
        ("https://169.254.169.254/latest", "non_public_address"),
        ("ftp://127.0.0.1/hook", "scheme"),
    ])
    def test_name_and_syntax_rules_still_hold(self, bot, dns, url, reason):
        body = bot.error("setWebhook", 400, "INVALID_PARAMETER", url=url, secret_token=SECRET)
        assert body["parameters"] == {"field": "url", "reason": reason}
