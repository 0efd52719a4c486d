"""The ``botsvc`` operator commands are clients of the method catalogue: the
same schema and the same entry as /manage/v1, so a command fails exactly as
the API does, and can do nothing the API would refuse."""
from __future__ import annotations

import json
import os
import re

import pytest

from botsvc.cli import OPERATOR_COMMANDS
from botsvc.config import Settings
from botsvc.devkit.paths import REPO
from botsvc.factory import create_app
from botsvc.manage.dispatch import OPERATOR_METHODS
from tests.support.cli import Done
from tests.support.cli import botsvc as run_botsvc
from tests.support.contract import ADMIN_TOKEN, Operator

ROOT = str(REPO)


def botsvc(data_dir, *args) -> Done:
    return run_botsvc(*args, env={"BOTSVC_DATA_DIR": str(data_dir), "BOTSVC_ADMIN_TOKEN": None,
                                  "BOTSVC_URL": None})


@pytest.fixture(autouse=True)
def installation(tmp_path):
    """The data dir every test's commands act on (they never make one)."""
    assert botsvc(tmp_path, "migrate").returncode == 0


def failure(done: Done) -> dict:
    assert done.returncode == 1, (done.stdout, done.stderr)
    assert done.stdout == ""
    return json.loads(done.stderr.strip().splitlines()[-1])


def api(data_dir) -> Operator:
    """/manage/v1 on the same data dir as the commands."""
    settings = Settings.from_env({"BOTSVC_DATA_DIR": str(data_dir),
                                  "BOTSVC_ADMIN_TOKEN": ADMIN_TOKEN})
    return Operator(create_app(settings).test_client())


def test_a_bad_username_fails_as_the_api_fails_and_creates_nothing(tmp_path):
    refused = failure(botsvc(tmp_path, "create-bot", "Bad Name"))
    operator = api(tmp_path)
    assert refused == operator.call("createBot", username="Bad Name").get_json()
    assert refused["error_code"] == "INVALID_PARAMETER"
    assert refused["parameters"] == {"field": "username"}
    assert operator("listBots") == []


def test_user_send_holds_the_16384_byte_limit(tmp_path):
    assert json.loads(botsvc(tmp_path, "create-bot", "limit_bot").stdout)["bot"]["id"] == 1
    assert json.loads(botsvc(tmp_path, "create-user").stdout) == {"user_id": 1}
    assert botsvc(tmp_path, "user-start", "1", "1").returncode == 0
    too_long = "\u00e9" * 8192 + "x"              # 8193 characters, 16385 bytes
    refused = failure(botsvc(tmp_path, "user-send", "1", "1", too_long))
    assert refused["error_code"] == "INVALID_PARAMETER"
    assert refused["parameters"] == {"field": "text"}
    sent = botsvc(tmp_path, "user-send", "1", "1", too_long[:-1])
    assert sent.returncode == 0, sent.stderr
    assert json.loads(sent.stdout)["text"] == too_long[:-1]
    # Neither "5" as text nor "1" as an id is special: values are read as the
    # schema types them, as in a form.
    assert json.loads(botsvc(tmp_path, "user-send", "1", "1", "5").stdout)["text"] == "5"


@pytest.mark.parametrize("args, field", [
    (("user-start", "one", "1"), "user_id"),
    (("user-start", "1", "1", "--start-parameter", "not ok"), "start_parameter"),
    (("rotate-token", "1.5"), "bot_id"),
    (("user-send", "1", "1", "hi", "--reply-to", "0"), "reply_to_message_id"),
    (("create-user", "--display-name", "x" * 129), "display_name"),
    (("user-click", "1", "1", "1", ""), "callback_data"),
])
def test_bad_arguments_name_the_field(tmp_path, args, field):
    refused = failure(botsvc(tmp_path, *args))
    assert (refused["error_code"], refused["parameters"].get("field")) == (
        "INVALID_PARAMETER", field)


def test_every_command_is_an_operator_method_and_names_its_parameters():
    for command in OPERATOR_COMMANDS:
        method = OPERATOR_METHODS[command.method]
        fields = method.schema.fields if method.schema is not None else {}
        named = [*command.arguments, *command.options.values(), *command.flags.values(),
                 *([command.switch] if command.switch else [])]
        assert set(named) <= set(fields), command
        required = {name for name, field in fields.items() if field.required}
        assert required <= set(named), command


def test_bot_calls_reads_the_call_log_as_get_bot_calls_does(tmp_path):
    created = json.loads(botsvc(tmp_path, "create-bot", "logged_bot").stdout)
    operator = api(tmp_path)
    client = operator.client
    auth = {"Authorization": f"Bearer {created['token']}"}
    assert client.post("/v2/getMe", headers=auth, json={}).status_code == 200
    assert client.post("/v2/sendMessage", headers=auth,
                       json={"chat_id": "vc_" + "0" * 40, "text": "x"}).status_code == 404
    assert client.post("/v2/getMe", headers=auth, json={"a": 1}).status_code == 400
    everything = operator("getBotCalls", bot_id=1)   # also writes what the app holds
    assert len(everything["calls"]) == 3
    listed = botsvc(tmp_path, "bot-calls", "1")
    assert listed.returncode == 0, listed.stderr
    assert json.loads(listed.stdout) == everything
    failed_gets = botsvc(tmp_path, "bot-calls", "1", "--method", "getMe", "--failures-only")
    assert json.loads(failed_gets.stdout)["calls"] == everything["calls"][:1]
    paged = json.loads(botsvc(tmp_path, "bot-calls", "1", "--limit", "2").stdout)
    rest = json.loads(botsvc(tmp_path, "bot-calls", "1", "--cursor", paged["next_cursor"]).stdout)
    assert paged["calls"] + rest["calls"] == everything["calls"]
    refused = failure(botsvc(tmp_path, "bot-calls", "1", "--method", "sendmessage"))
    assert refused["parameters"] == {"field": "method"}


def test_readme_botsvc_examples_run_as_written(tmp_path):
    with open(os.path.join(ROOT, "README.md"), encoding="utf-8") as readme:
        lines = [re.split(r"[#>|)]", line[line.index(".venv/bin/botsvc "):])[0].split()
                 for line in readme if ".venv/bin/botsvc " in line]
    assert [line[1] for line in lines] == ["create-bot", "create-user", "user-start", "openapi"]
    outputs = []
    for line in lines:
        done = botsvc(tmp_path, *line[1:])
        assert done.returncode == 0, done.stderr
        outputs.append(json.loads(done.stdout))
    assert re.match(r"^1:[A-Za-z0-9_-]{43}$", outputs[0]["token"])
    assert outputs[1] == {"user_id": 1}
    assert re.match(r"^vc_[0-9a-f]{40}$", outputs[2]["chat_id"])
    assert outputs[3]["info"]["version"] == "2.0.0"


def test_botsvc_openapi_prints_what_the_route_serves(tmp_path):
    printed = botsvc(tmp_path, "openapi")
    assert printed.returncode == 0, printed.stderr
    served = create_app(Settings.from_env({"BOTSVC_DATA_DIR": str(tmp_path)})).test_client()
    assert printed.stdout.rstrip("\n") == served.get("/openapi.json").get_data(as_text=True)
