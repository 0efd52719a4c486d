"""A client generated from the served document works: openapi-python-client
(the Python generator most people use, pinned in the test extras) makes a
package from a real server's /openapi.json; every module of it imports; and
a bot's first steps run through it against that server, with every failure
of every operation one type (``Failure``).

Before the document was shaped for generators (docs/openapi.md), every
status of every operation inlined its own envelope and error-code enum: the
same generator made 1,304 models from the document with the testing tools,
and one module did not parse. Now it makes about 130.
"""
from __future__ import annotations

import importlib
import json
import pkgutil
import subprocess
import sys

import pytest
import requests

from botsvc.devkit.servers import running_server

pytestmark = pytest.mark.server

PACKAGE = "botsvc_generated_client"
MODELS_BEFORE = 1304
MODELS_AT_MOST = 170   # about an order of magnitude fewer, with room for new methods (154 with exportChat, replay and the call log's detail)


@pytest.fixture(scope="module")
def server(tmp_path_factory):
    with running_server(tmp_path_factory.mktemp("generated"), BOTSVC_TEST_TOOLS=1) as server:
        yield server


@pytest.fixture(scope="module")
def generated(server, tmp_path_factory):
    """The generated package, importable for this module's tests."""
    work = tmp_path_factory.mktemp("generator")
    document = work / "openapi.json"
    document.write_text(requests.get(f"{server.base_url}/openapi.json", timeout=30).text)
    config = work / "config.json"
    config.write_text(json.dumps({"post_hooks": []}))   # no formatter run: only the code
    done = subprocess.run([sys.executable, "-m", "openapi_python_client", "generate",
                           "--path", str(document), "--meta", "none", "--config", str(config),
                           "--output-path", str(work / PACKAGE)],
                          capture_output=True, text=True, timeout=300, cwd=work)
    assert done.returncode == 0, done.stdout[-3000:] + done.stderr[-3000:]
    assert "Error(s) encountered" not in done.stdout, done.stdout[-3000:]
    sys.path.insert(0, str(work))
    try:
        yield work / PACKAGE
    finally:
        sys.path.remove(str(work))
        for name in [name for name in sys.modules if name.split(".")[0] == PACKAGE]:
            del sys.modules[name]


def test_every_generated_module_imports(generated):
    package = importlib.import_module(PACKAGE)
    names = [info.name for info in pkgutil.walk_packages(package.__path__, f"{PACKAGE}.")]
    for name in names:
        importlib.import_module(name)
    assert f"{PACKAGE}.api.sending.send_message" in names


def test_an_order_of_magnitude_fewer_models(generated):
    models = [path for path in (generated / "models").glob("*.py") if path.name != "__init__.py"]
    assert len(models) <= MODELS_AT_MOST, f"{len(models)} models (before: {MODELS_BEFORE})"


def test_a_bot_s_first_steps_through_the_generated_client(generated, server):
    client = importlib.import_module(PACKAGE)
    api = importlib.import_module(f"{PACKAGE}.api")
    models = importlib.import_module(f"{PACKAGE}.models")
    for group in ("operator", "sending", "updates"):
        importlib.import_module(f"{api.__name__}.{group}")
    operator = client.AuthenticatedClient(base_url=server.base_url, token=server.admin_token)
    operations = api.operator

    created = operations.manage_create_bot.sync(
        client=operator, body=models.CreateBot(username="generated_bot"))
    assert isinstance(created, models.OkCreatedBot), created
    user = operations.manage_create_user.sync(client=operator, body=models.CreateUser())
    assert isinstance(user, models.OkCreatedUser), user
    started = operations.manage_user_start.sync(client=operator, body=models.UserStart(
        user_id=user.result.user_id, bot_id=created.result.bot.id))
    assert isinstance(started, models.OkStartedChat), started

    bot = client.AuthenticatedClient(base_url=server.base_url, token=created.result.token)
    keyboard = models.InlineKeyboard(inline_keyboard=[[
        models.Button(text="Yes", callback_data="yes"),
        models.Button(text="Docs", url="https://example.org/docs")]])
    sent = api.sending.send_message.sync(client=bot, body=models.SendMessage(
        chat_id=started.result.chat_id, text="Hello from a generated client",
        reply_markup=keyboard))
    assert isinstance(sent, models.OkMessage), sent
    assert sent.result.text == "Hello from a generated client"
    assert [[button.text for button in row]
            for row in sent.result.reply_markup.inline_keyboard] == [["Yes", "Docs"]]

    # getUpdates' parameters all have defaults: the generated body needs none.
    updates = api.updates.get_updates.sync(client=bot, body=models.GetUpdates())
    assert isinstance(updates, models.OkUpdateList), updates
    (update,) = updates.result
    assert update.update_id == started.result.update_id
    assert update.membership.chat_id == started.result.chat_id
    assert update.membership.status == models.MembershipStatus.ACTIVE

    # Every failure is one type, whatever the status and the operation.
    missing = api.sending.send_message.sync(client=bot, body=models.SendMessage(
        chat_id="999999999", text="nobody there"))
    unauthorized = api.updates.get_updates.sync(
        client=client.AuthenticatedClient(base_url=server.base_url, token="1:" + "A" * 43),
        body=models.GetUpdates())
    for failure, code in ((missing, "CHAT_NOT_FOUND"),
                        (unauthorized, "UNAUTHORIZED")):
        assert isinstance(failure, models.Failure), failure
        assert failure.error_code == models.FailureErrorCode(code)
        assert failure.ok is False and failure.description
    detailed = api.sending.send_message.sync_detailed(client=bot, body=models.SendMessage(
        chat_id="999999999", text="nobody there"))
    assert detailed.status_code == 404 and isinstance(detailed.parsed, models.Failure)
