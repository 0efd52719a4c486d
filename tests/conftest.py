"""Shared fixtures: the real app on a temporary SQLite file.

Rate limits are off unless a test turns them on (``make_app(rate_api_per_sec=...)``),
so that tests which make many calls measure behaviour, not timing.
"""
from __future__ import annotations

import itertools
from types import SimpleNamespace

import pytest

from app import create_app
from app.config import Settings
from app.db import connect

ADMIN_TOKEN = "test-admin-token"
FAILURE_KEYS = {"ok", "error_code", "description", "parameters"}
NO_RATE_LIMITS = dict(rate_api_per_sec=0, rate_sends_per_sec=0, rate_uploads_per_min=0,
                      rate_broadcasts_per_min=0)


@pytest.fixture
def make_app(tmp_path):
    def factory(**overrides):
        values = dict(data_dir=str(tmp_path / "data"), admin_token=ADMIN_TOKEN,
                      **NO_RATE_LIMITS)
        values.update(overrides)
        return create_app(Settings.from_env({}, **values))
    return factory


@pytest.fixture
def app(make_app):
    return make_app()


@pytest.fixture
def client(app):
    return app.test_client()


class Operator:
    """The /manage/v1 API, as the bot manager and the simulated users."""

    def __init__(self, client):
        self.client = client

    def call(self, method: str, **params):
        return self.client.post(f"/manage/v1/{method}", json=params,
                                headers={"Authorization": f"Bearer {ADMIN_TOKEN}"})

    def __call__(self, method: str, **params):
        response = self.call(method, **params)
        assert response.status_code == 200, response.get_json()
        return response.get_json()["result"]


class BotClient:
    """One bot's view of /v2."""

    def __init__(self, client, bot: dict, token: str):
        self.client, self.bot, self.token = client, bot, token
        self.id = bot["id"]

    def call(self, method: str, params: dict | None = None, *, headers: dict | None = None,
             **kwargs):
        headers = {"Authorization": f"Bearer {self.token}", **(headers or {})}
        if "data" not in kwargs and "json" not in kwargs:
            kwargs["json"] = {} if params is None else params
        return self.client.post(f"/v2/{method}", headers=headers, **kwargs)

    def ok(self, method: str, **params):
        response = self.call(method, params)
        body = response.get_json()
        assert response.status_code == 200 and body["ok"] is True, body
        return body["result"]

    def error(self, method: str, status: int, error_code: str, **params) -> dict:
        return assert_failure(self.call(method, params), status, error_code)

    def raw(self, method: str, data: bytes, *, headers: dict | None = None,
            content_type: str = "application/json"):
        """POST exact bytes (for malformed or oversized bodies)."""
        headers = {"Authorization": f"Bearer {self.token}", **(headers or {})}
        return self.client.post(f"/v2/{method}", data=data, headers=headers,
                                content_type=content_type)


def assert_failure(response, status: int, error_code: str, **parameters) -> dict:
    """A failure in the contract's envelope: exactly ok/error_code/description/
    parameters, with the given status and code, and ``parameters`` holding at
    least the given items."""
    body = response.get_json()
    assert (response.status_code, body["error_code"]) == (status, error_code), body
    assert set(body) == FAILURE_KEYS, body
    assert body["ok"] is False and isinstance(body["description"], str), body
    assert isinstance(body["parameters"], dict), body
    for name, value in parameters.items():
        assert body["parameters"].get(name) == value, body
    return body


def assert_invalid(response, field: str) -> dict:
    """INVALID_PARAMETER (400) naming ``field``."""
    return assert_failure(response, 400, "INVALID_PARAMETER", field=field)


_names = itertools.count(1)


@pytest.fixture
def operator(client):
    return Operator(client)


@pytest.fixture
def new_bot(client, operator):
    def factory(username: str | None = None) -> BotClient:
        created = operator("createBot", username=username or f"test{next(_names)}_bot")
        return BotClient(client, created["bot"], created["token"])
    return factory


@pytest.fixture
def bot(new_bot):
    return new_bot()


@pytest.fixture
def new_user(operator):
    return lambda: operator("createUser")["user_id"]


@pytest.fixture
def start_chat(operator, new_user):
    """A user who pressed Start for ``bot``: SimpleNamespace(user_id, chat_id)."""
    def factory(bot: BotClient, user_id: int | None = None, **extra):
        user_id = user_id or new_user()
        started = operator("userStart", user_id=user_id, bot_id=bot.id, **extra)
        return SimpleNamespace(user_id=user_id, chat_id=started["chat_id"],
                               update_id=started["update_id"])
    return factory


@pytest.fixture
def chat(bot, start_chat):
    return start_chat(bot)


@pytest.fixture
def db(app):
    """A direct connection to the app's database, for ageing rows and checking state."""
    conn = connect(app.config["SETTINGS"].db_path)
    yield conn
    conn.close()


@pytest.fixture
def clock(monkeypatch):
    """Freezes the rate limiter's clock: ``clock.now`` is what it reads;
    ``clock.advance(seconds)`` moves it on."""
    state = SimpleNamespace(now=1_700_000_000.25)
    state.advance = lambda seconds: setattr(state, "now", state.now + seconds)
    monkeypatch.setattr("app.limits.time", SimpleNamespace(time=lambda: state.now))
    return state
