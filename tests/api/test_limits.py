"""Per-bot rate limits: GCRA in SQLite, and the 429 contract over HTTP."""
from __future__ import annotations

import math

import pytest

from botsvc.config import Settings
from botsvc.db import connect
from botsvc.errors import RateLimited
from botsvc.limits import API, SEND, Limit, configured_limits, consume, headroom
from botsvc.migrations import migrate
from tests.support.contract import (
    ADMIN_TOKEN,
    NO_RATE_LIMITS,
    BotClient,
    Operator,
    assert_failure,
    assert_invalid,
)

NOWS = [1_700_000_000.0, 1_700_000_000.123456, 1_754_321_987.654321, 12.5]


@pytest.fixture
def conn(tmp_path):
    path = str(tmp_path / "limits.sqlite3")
    migrate(path)
    connection = connect(path)
    # Rate state belongs to an existing bot (a trigger refuses any other).
    connection.executemany("INSERT INTO bots (id, username, display_name, token_hash,"
                           " created_at) VALUES (?, ?, ?, x'', 0)",
                           [(1, "one_bot", "one_bot"), (2, "two_bot", "two_bot")])
    yield connection
    connection.close()


def _allowed(conn, limits, now, bot_id=1) -> bool:
    try:
        consume(conn, bot_id, limits, now=now)
        return True
    except RateLimited:
        return False


@pytest.mark.parametrize("now", NOWS)
@pytest.mark.parametrize("count, period", [(1, 1.0), (5, 1.0), (9, 1.0), (11, 1.0), (20, 1.0),
                                           (47, 1.0), (60, 1.0), (100, 1.0), (1000, 1.0), (10, 60.0),
                                           (17, 60.0), (29, 60.0)])
def test_burst_of_exactly_n(conn, now, count, period):
    limit = Limit("api", count, period)
    assert [_allowed(conn, [limit], now) for _ in range(count)] == [True] * count
    with pytest.raises(RateLimited) as refused:
        consume(conn, 1, [limit], now=now)
    assert refused.value.parameters["retry_after"] == max(1, math.ceil(period / count))


@pytest.mark.parametrize("now", NOWS)
def test_recovery_after_one_interval(conn, now):
    limit = Limit("api", 4, 1.0)
    for _ in range(4):
        consume(conn, 1, [limit], now=now)
    assert not _allowed(conn, [limit], now + 0.2)
    assert _allowed(conn, [limit], now + 0.25)
    assert not _allowed(conn, [limit], now + 0.3)
    assert _allowed(conn, [limit], now + 0.5)
    # after a full period of silence the whole burst is back, and no more
    later = now + 10
    assert [_allowed(conn, [limit], later) for _ in range(5)] == [True] * 4 + [False]


def test_sustained_rate_is_the_configured_rate(conn):
    limit = Limit("send", 20, 1.0)
    now, allowed = 1_700_000_000.0, 0
    for step in range(1000):  # one attempt every 10 ms for 10 s
        allowed += _allowed(conn, [limit], now + step * 0.01)
    assert 20 * 10 <= allowed <= 20 * 10 + 20


def test_retry_after_is_the_wait_rounded_up(conn):
    limit = Limit("upload", 10, 60.0)  # one every 6 s
    now = 1_700_000_000.0
    for _ in range(10):
        consume(conn, 1, [limit], now=now)
    with pytest.raises(RateLimited) as refused:
        consume(conn, 1, [limit], now=now + 1.5)
    assert refused.value.parameters == {"retry_after": 5}
    assert refused.value.headers() == {"Retry-After": "5"}


def test_several_limits_are_all_or_nothing(conn):
    api, send = Limit(API, 10, 1.0), Limit(SEND, 2, 1.0)
    now = 1_700_000_000.0
    assert _allowed(conn, [api, send], now) and _allowed(conn, [api, send], now)
    for _ in range(3):
        assert not _allowed(conn, [api, send], now)
    # the refused requests took nothing from the API limit
    assert headroom(conn, 1, api, now=now) == 8
    assert [_allowed(conn, [api], now) for _ in range(9)] == [True] * 8 + [False]


def test_the_longest_wait_is_reported(conn):
    fast, slow = Limit(API, 1, 1.0), Limit(SEND, 1, 60.0)
    now = 1_700_000_000.0
    consume(conn, 1, [fast, slow], now=now)
    with pytest.raises(RateLimited) as refused:
        consume(conn, 1, [fast, slow], now=now)
    assert refused.value.parameters["retry_after"] == 60


def test_limits_are_per_bot(conn):
    limit = Limit(API, 2, 1.0)
    now = 1_700_000_000.0
    assert _allowed(conn, [limit], now, bot_id=1) and _allowed(conn, [limit], now, bot_id=1)
    assert not _allowed(conn, [limit], now, bot_id=1)
    assert _allowed(conn, [limit], now, bot_id=2)


@pytest.mark.parametrize("now", NOWS)
@pytest.mark.parametrize("count", [1, 7, 20, 52, 60, 61])
def test_headroom(conn, now, count):
    limit = Limit(SEND, count, 1.0)
    assert headroom(conn, 1, limit, now=now) == count
    consume(conn, 1, [limit], now=now)
    assert headroom(conn, 1, limit, now=now) == count - 1
    while _allowed(conn, [limit], now):
        pass
    assert headroom(conn, 1, limit, now=now) == 0
    # part of an interval later the limit still refuses, and headroom agrees
    part = now + limit.interval * 0.6
    assert headroom(conn, 1, limit, now=part) == 0 and not _allowed(conn, [limit], part)
    assert headroom(conn, 1, limit, now=now + limit.interval) == 1


def test_empty_list_of_limits_always_allows(conn):
    for _ in range(100):
        consume(conn, 1, [], now=1.0)


def test_zero_turns_a_limit_off():
    limits = configured_limits(Settings(rate_api_per_sec=0, rate_sends_per_sec=5,
                                        rate_uploads_per_min=0, rate_broadcasts_per_min=3))
    assert set(limits) == {"send", "broadcast"}
    assert limits["send"] == Limit("send", 5, 1.0)
    assert limits["broadcast"] == Limit("broadcast", 3, 60.0)


def test_default_limits():
    settings = Settings.from_env({}, data_dir="/nonexistent-unused", secret_key=b"k")
    assert configured_limits(settings) == {
        "api": Limit("api", 60, 1.0), "send": Limit("send", 20, 1.0),
        "upload": Limit("upload", 10, 60.0), "broadcast": Limit("broadcast", 10, 60.0)}


def test_settings_from_the_environment():
    settings = Settings.from_env({"BOTSVC_RATE_API_PER_SEC": "7", "BOTSVC_RATE_SENDS_PER_SEC": "0"},
                                 data_dir="/nonexistent-unused", secret_key=b"k")
    assert (settings.rate_api_per_sec, settings.rate_sends_per_sec) == (7, 0)


# -- over HTTP -------------------------------------------------------------------

def _limited_bots(make_app, count=1, **rates):
    app = make_app(**{**NO_RATE_LIMITS, **rates})
    client = app.test_client()
    operator = Operator(client)
    bots = []
    for n in range(count):
        created = operator("createBot", username=f"rate{n}_bot")
        bot = BotClient(client, created["bot"], created["token"])
        user = operator("createUser")["user_id"]
        bot.chat_id = operator("userStart", user_id=user, bot_id=bot.id)["chat_id"]
        bots.append(bot)
    return bots


def test_api_limit_over_http(make_app, clock):
    (bot,) = _limited_bots(make_app, rate_api_per_sec=3)
    for _ in range(3):
        bot.ok("getMe")
    response = bot.call("getMe")
    body = assert_failure(response, 429, "RATE_LIMITED", retry_after=1)
    assert type(body["parameters"]["retry_after"]) is int
    assert response.headers["Retry-After"] == "1"
    clock.advance(1 / 3)
    bot.ok("getMe")
    bot.error("getMe", 429, "RATE_LIMITED")


def test_api_limit_counts_every_method(make_app, clock):
    (bot,) = _limited_bots(make_app, rate_api_per_sec=4)
    bot.ok("getMe")
    bot.ok("getUpdates")
    bot.ok("getChat", chat_id=bot.chat_id)
    bot.ok("sendMessage", chat_id=bot.chat_id, text="x")
    bot.error("getChatMember", 429, "RATE_LIMITED", chat_id=bot.chat_id)


def test_rate_limit_comes_before_validation(make_app, clock):
    (bot,) = _limited_bots(make_app, rate_api_per_sec=2)
    assert_invalid(bot.call("getUpdates", {"limit": 0}), "limit")
    bot.error("getChat", 404, "CHAT_NOT_FOUND", chat_id="vc_nothing")
    bot.error("getUpdates", 429, "RATE_LIMITED", limit=0)


def test_send_limit_is_separate_from_the_api_limit(make_app, clock):
    (bot,) = _limited_bots(make_app, rate_api_per_sec=100, rate_sends_per_sec=2)
    bot.ok("sendMessage", chat_id=bot.chat_id, text="1")
    bot.ok("sendMessage", chat_id=bot.chat_id, text="2")
    response = bot.call("sendMessage", {"chat_id": bot.chat_id, "text": "3"})
    assert_failure(response, 429, "RATE_LIMITED", retry_after=1)
    assert response.headers["Retry-After"] == "1"
    for _ in range(10):
        bot.ok("getMe")
    clock.advance(0.5)
    bot.ok("sendMessage", chat_id=bot.chat_id, text="3")


def test_a_refused_send_takes_nothing_from_the_api_limit(make_app, clock):
    (bot,) = _limited_bots(make_app, rate_api_per_sec=3, rate_sends_per_sec=1)
    bot.ok("sendMessage", chat_id=bot.chat_id, text="1")
    for _ in range(5):
        bot.error("sendMessage", 429, "RATE_LIMITED", chat_id=bot.chat_id, text="2")
    bot.ok("getMe")
    bot.ok("getMe")
    bot.error("getMe", 429, "RATE_LIMITED")


def test_zero_turns_the_limits_off_over_http(make_app, clock):
    (bot,) = _limited_bots(make_app, rate_api_per_sec=0, rate_sends_per_sec=0)
    for n in range(150):
        bot.ok("sendMessage", chat_id=bot.chat_id, text=str(n))


def test_api_off_send_on(make_app, clock):
    (bot,) = _limited_bots(make_app, rate_api_per_sec=0, rate_sends_per_sec=1)
    bot.ok("sendMessage", chat_id=bot.chat_id, text="1")
    bot.error("sendMessage", 429, "RATE_LIMITED", chat_id=bot.chat_id, text="2")
    for _ in range(100):
        bot.ok("getMe")


def test_limits_are_per_bot_over_http(make_app, clock):
    first, second = _limited_bots(make_app, count=2, rate_api_per_sec=2)
    first.ok("getMe")
    first.ok("getMe")
    first.error("getMe", 429, "RATE_LIMITED")
    second.ok("getMe")
    second.ok("getMe")
    second.error("getMe", 429, "RATE_LIMITED")


def test_unauthorized_requests_take_no_rate(make_app, clock):
    (bot,) = _limited_bots(make_app, rate_api_per_sec=1)
    for _ in range(5):
        assert_failure(bot.client.post("/v2/getMe", json={},
                                       headers={"Authorization": f"Bearer {bot.id}:" + "A" * 43}),
                       401, "UNAUTHORIZED")
    bot.ok("getMe")


def test_default_rate_limits_are_in_force(tmp_path, clock):
    from botsvc.factory import create_app
    app = create_app(Settings.from_env({}, data_dir=str(tmp_path / "d"),
                                       admin_token=ADMIN_TOKEN))
    client = app.test_client()
    created = Operator(client)("createBot", username="defaults_bot")
    bot = BotClient(client, created["bot"], created["token"])
    for _ in range(60):
        bot.ok("getMe")
    bot.error("getMe", 429, "RATE_LIMITED")
