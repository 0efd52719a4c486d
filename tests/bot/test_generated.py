"""The SDK's methods are the catalogue's: app/botsvc/bot/methods.py is what
app/botsvc/devkit/bot_methods.py writes from it now, one method per /v2
method with the contract's parameter names, in a blocking and an awaited
form."""
from __future__ import annotations

import inspect

from botsvc.api.registry import METHODS
from botsvc.bot import Api, AsyncApi
from botsvc.bot.methods import METHOD_NAMES
from botsvc.devkit.bot_methods import TARGET, render, snake


def test_the_generated_methods_are_current():
    assert TARGET.read_text() == render(), (
        "app/botsvc/bot/methods.py is stale: run .venv/bin/python -m botsvc.devkit.bot_methods")


def test_one_method_per_v2_method_with_the_contracts_parameters():
    assert set(METHOD_NAMES) == set(METHODS)
    for name, entry in METHODS.items():
        expected = set(entry.schema.fields) if entry.schema is not None else set()
        for client in (Api, AsyncApi):
            method = getattr(client, snake(name))
            params = set(inspect.signature(method).parameters) - {"self", "idempotency_key"}
            assert params == expected, (client.__name__, name)
            assert inspect.iscoroutinefunction(method) is (client is AsyncApi)


def test_required_parameters_have_no_default_and_the_rest_are_keyword_only():
    parameters = inspect.signature(Api.send_photo).parameters
    assert [p for p, spec in parameters.items() if spec.default is inspect.Parameter.empty] == [
        "self", "chat_id", "photo"]
    assert parameters["caption"].kind is inspect.Parameter.KEYWORD_ONLY
    assert inspect.signature(Api.send_photo).return_annotation == "Message"
