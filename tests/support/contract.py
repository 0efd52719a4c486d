"""What tests share besides fixtures: clients for the two APIs and the
assertions of the contract's failure envelope. Imported by module name
(``from contract import assert_invalid``); conftest.py builds its fixtures on it."""
from __future__ import annotations

ADMIN_TOKEN = "test-admin-token"
FAILURE_KEYS = {"ok", "error_code", "description", "parameters"}
NO_RATE_LIMITS = dict(rate_api_per_sec=0, rate_sends_per_sec=0, rate_uploads_per_min=0,
                      rate_broadcasts_per_min=0)


class Operator:
    """The /manage/v1 API, as the bot manager and the simulated users."""

    def __init__(self, client):
        self.client = client

    # Positional-only: injectFault has a parameter named ``method``.
    def call(self, method: str, /, **params):
        return self.client.post(f"/manage/v1/{method}", json=params,
                                headers={"Authorization": f"Bearer {ADMIN_TOKEN}"})

    def __call__(self, method: str, /, **params):
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

    # Positional-only, so that a parameter named ``method`` (createBroadcast)
    # can be passed as a keyword.
    def ok(self, method: str, /, **params):
        response = self.call(method, params)
        body = response.get_json()
        assert response.status_code == 200 and body["ok"] is True, body
        return body["result"]

    def error(self, method: str, status: int, error_code: str, /, **params) -> dict:
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
