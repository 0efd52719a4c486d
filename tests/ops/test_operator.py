"""The operator API /manage/v1 (all but userClickButton) and the
same operations as ``botsvc`` commands."""
from __future__ import annotations

import json
import os
import re
import subprocess

import pytest

from botsvc.devkit.paths import REPO
from tests.support.cli import botsvc
from tests.support.contract import ADMIN_TOKEN, BotClient, assert_failure, assert_invalid

ROOT = str(REPO)
BOTSVC = os.path.join(ROOT, ".venv", "bin", "botsvc")
TOKEN = re.compile(r"^[1-9][0-9]*:[A-Za-z0-9_-]{43}$")


@pytest.mark.parametrize("username", ["abbot", "a" * 29 + "bot", "my_shop_bot", "b0t_2bot",
                                      "___bot", "12bot"])
def test_create_bot_accepts_valid_usernames(operator, client, username):
    created = operator("createBot", username=username)
    assert set(created) == {"bot", "token"} and TOKEN.match(created["token"])
    assert created["bot"] == {"id": created["bot"]["id"], "is_bot": True, "username": username,
                              "display_name": created["bot"]["display_name"],
                              "description": created["bot"]["description"]}
    me = BotClient(client, created["bot"], created["token"]).ok("getMe")
    assert me == created["bot"]


@pytest.mark.parametrize("username", ["abot", "a" * 30 + "bot", "MyBot", "my_Bot", "shop",
                                      "shopbot_", "my-bot", "my.bot", "my bot", "caf\u00e9bot",
                                      "", "bot", "abcbot\n", "botbo"])
def test_create_bot_rejects_bad_usernames(operator, username):
    assert_invalid(operator.call("createBot", username=username), "username")


@pytest.mark.parametrize("params, field", [
    ({}, "username"), ({"username": 5}, "username"), ({"username": None}, "username"),
    ({"username": "fine_bot", "display_name": 1}, "display_name"),
    ({"username": "fine_bot", "description": None}, "description"),
    ({"username": "fine_bot", "token": "mine"}, "token"),
])
def test_create_bot_parameters(operator, params, field):
    assert_invalid(operator.call("createBot", **params), field)
    assert operator("listBots") == []


def test_taken_username(operator):
    operator("createBot", username="taken_bot")
    assert_invalid(operator.call("createBot", username="taken_bot"), "username")
    assert len(operator("listBots")) == 1


def test_display_name_and_description(operator):
    created = operator("createBot", username="named_bot", display_name="Named \u2603",
                       description="Does things")
    assert created["bot"]["display_name"] == "Named \u2603"
    assert created["bot"]["description"] == "Does things"


def test_list_bots_shows_disabled(operator, new_bot):
    first, second = new_bot(), new_bot()
    assert operator("setBotDisabled", bot_id=second.id, disabled=True) is True
    listed = operator("listBots")
    assert [b["id"] for b in listed] == [first.id, second.id]
    assert [b["disabled"] for b in listed] == [False, True]
    assert listed[0] == {**first.ok("getMe"), "disabled": False}


def test_rotate_token(operator, bot):
    rotated = operator("rotateToken", bot_id=bot.id)
    assert set(rotated) == {"token"} and TOKEN.match(rotated["token"])
    assert rotated["token"].split(":")[0] == str(bot.id)
    bot.error("getMe", 401, "UNAUTHORIZED")


@pytest.mark.parametrize("method, params, field", [
    ("rotateToken", {"bot_id": 999}, "bot_id"),
    ("rotateToken", {"bot_id": "1"}, "bot_id"),
    ("rotateToken", {}, "bot_id"),
    ("setBotDisabled", {"bot_id": 999, "disabled": True}, "bot_id"),
    ("setBotDisabled", {"bot_id": "BOT", "disabled": 1}, "disabled"),
    ("setBotDisabled", {"bot_id": "BOT"}, "disabled"),
    ("setPlatformDisabled", {}, "disabled"),
    ("setPlatformDisabled", {"disabled": "true"}, "disabled"),
    ("listBots", {"all": True}, "all"),
    ("createUser", {"display_name": 7}, "display_name"),
    ("createUser", {"name": "x"}, "name"),
    ("userStart", {"user_id": 999, "bot_id": "BOT"}, "user_id"),
    ("userStart", {"user_id": "USER", "bot_id": 999}, "bot_id"),
    ("userStart", {"user_id": "USER", "bot_id": "BOT", "start_parameter": 5},
     "start_parameter"),
    ("userStop", {"user_id": 999, "bot_id": "BOT"}, "user_id"),
    ("userBlock", {"user_id": "USER", "bot_id": 999}, "bot_id"),
    ("userSendMessage", {"user_id": "USER", "bot_id": "BOT", "text": ""}, "text"),
    ("userSendMessage", {"user_id": "USER", "bot_id": "BOT", "text": "x" * 16385}, "text"),
    ("userSendMessage", {"user_id": 999, "bot_id": "BOT", "text": "hi"}, "user_id"),
    ("userGetChat", {"user_id": "USER", "bot_id": 999}, "bot_id"),
    ("userGetChat", {"user_id": True, "bot_id": "BOT"}, "user_id"),
])
def test_bad_operator_parameters(operator, bot, new_user, method, params, field):
    user = new_user()
    params = {k: bot.id if v == "BOT" else user if v == "USER" else v for k, v in params.items()}
    assert_invalid(operator.call(method, **params), field)


def test_set_bot_disabled_and_back(operator, bot):
    assert operator("setBotDisabled", bot_id=bot.id, disabled=True) is True
    bot.error("getMe", 403, "BOT_DISABLED")
    assert operator("setBotDisabled", bot_id=bot.id, disabled=False) is True
    assert bot.ok("getMe")["id"] == bot.id


def test_set_platform_disabled_and_back(operator, bot):
    assert operator("setPlatformDisabled", disabled=True) is True
    bot.error("getMe", 503, "PLATFORM_DISABLED")
    assert operator("listBots")[0]["id"] == bot.id  # the operator side keeps working
    assert operator("setPlatformDisabled", disabled=False) is True
    bot.ok("getMe")


def test_create_user(operator):
    first = operator("createUser")
    second = operator("createUser", display_name="Alice")
    assert set(first) == {"user_id"} and type(first["user_id"]) is int
    assert second["user_id"] != first["user_id"]


def test_user_start_result(operator, bot, new_user):
    started = operator("userStart", user_id=new_user(), bot_id=bot.id)
    assert set(started) == {"chat_id", "update_id"}
    assert re.match(r"^vc_[0-9a-f]{40}$", started["chat_id"])
    assert bot.ok("getUpdates")[0]["update_id"] == started["update_id"]


def test_user_stop_and_block_results(operator, bot, chat):
    assert operator("userStop", user_id=chat.user_id, bot_id=bot.id) is True
    assert operator("userBlock", user_id=chat.user_id, bot_id=bot.id) is True


@pytest.mark.parametrize("method", ["userStop", "userBlock", "userGetChat", "userSendMessage"])
def test_user_actions_before_any_start(operator, bot, new_user, method):
    params = {"user_id": new_user(), "bot_id": bot.id}
    if method == "userSendMessage":
        params["text"] = "hello"
    assert_failure(operator.call(method, **params), 404, "CHAT_NOT_FOUND")
    assert bot.ok("getUpdates") == []


def test_user_get_chat(operator, bot, chat):
    sent = bot.ok("sendMessage", chat_id=chat.chat_id, text="hi there")
    mine = operator("userSendMessage", user_id=chat.user_id, bot_id=bot.id, text="hello")
    view = operator("userGetChat", user_id=chat.user_id, bot_id=bot.id)
    assert view["chat_id"] == chat.chat_id and view["status"] == "active"
    assert isinstance(view.get("callback_answers"), list)
    assert [(m["text"], m["from_bot"]) for m in view["messages"]] == [
        ("/start", False), ("hi there", True), ("hello", False)]
    assert view["messages"][1]["message_id"] == sent["message_id"]
    assert view["messages"][2] == mine
    operator("userStop", user_id=chat.user_id, bot_id=bot.id)
    assert operator("userGetChat", user_id=chat.user_id, bot_id=bot.id)["status"] == "stopped"


def test_operator_envelope_rules(client):
    auth = {"Authorization": f"Bearer {ADMIN_TOKEN}"}
    assert_failure(client.post("/manage/v1/noSuchMethod", json={}, headers=auth), 404,
                   "METHOD_NOT_FOUND")
    assert_failure(client.post("/manage/v1/listbots", json={}, headers=auth), 404,
                   "METHOD_NOT_FOUND")
    assert_failure(client.get("/manage/v1/listBots", headers=auth), 405, "METHOD_NOT_ALLOWED")
    assert_failure(client.post("/manage/v1/listBots", data=b"{", headers=auth,
                               content_type="application/json"), 400, "INVALID_JSON")
    assert_failure(client.post("/manage/v1/createBot", data=b"{" + b" " * (1 << 20) + b"}",
                               headers=auth, content_type="application/json"),
                   413, "REQUEST_TOO_LARGE")
    assert client.post("/manage/v1/listBots", data=b"", headers=auth).get_json() == {
        "ok": True, "result": []}


# -- the botsvc command ------------------------------------------------------------

def _cli(data_dir, *args, ok=True):
    done = botsvc(*args, env={"BOTSVC_DATA_DIR": str(data_dir), "BOTSVC_ADMIN_TOKEN": None,
                              "BOTSVC_URL": None})
    if ok:
        assert done.returncode == 0, done.stderr
        return json.loads(done.stdout)
    assert done.returncode != 0
    return json.loads(done.stderr.strip().splitlines()[-1])


def test_cli_end_to_end(tmp_path):
    from botsvc.config import Settings
    from botsvc.factory import create_app
    data_dir = tmp_path / "cli-data"
    assert botsvc("migrate", env={"BOTSVC_DATA_DIR": str(data_dir)}).returncode == 0
    created = _cli(data_dir, "create-bot", "cli_bot", "--display-name", "CLI",
                   "--description", "made in a shell")
    assert TOKEN.match(created["token"]) and created["bot"]["username"] == "cli_bot"
    bot_id = created["bot"]["id"]
    client = create_app(Settings.from_env({"BOTSVC_DATA_DIR": str(data_dir)})).test_client()
    bot = BotClient(client, created["bot"], created["token"])
    assert bot.ok("getMe") == created["bot"]

    user = _cli(data_dir, "create-user", "--display-name", "Ann")["user_id"]
    started = _cli(data_dir, "user-start", str(user), str(bot_id), "--start-parameter", "ref1")
    assert bot.ok("getUpdates")[0]["membership"] == {
        "chat_id": started["chat_id"], "status": "active", "start_parameter": "ref1"}
    said = _cli(data_dir, "user-send", str(user), str(bot_id), "hello from the shell")
    assert said["text"] == "hello from the shell" and said["from_bot"] is False
    sent = bot.ok("sendMessage", chat_id=started["chat_id"], text="hi Ann")
    view = _cli(data_dir, "user-chat", str(user), str(bot_id))
    assert [m["text"] for m in view["messages"]] == ["/start ref1", "hello from the shell",
                                                     "hi Ann"]
    assert view["messages"][-1]["message_id"] == sent["message_id"]
    assert view["has_more"] is False
    older = _cli(data_dir, "user-chat", str(user), str(bot_id), "--limit", "1",
                 "--before", str(sent["message_id"]))
    assert [m["text"] for m in older["messages"]] == ["hello from the shell"]
    assert older["has_more"] is True

    assert _cli(data_dir, "user-stop", str(user), str(bot_id)) is True
    bot.error("sendMessage", 403, "BOT_NOT_STARTED", chat_id=started["chat_id"], text="x")
    assert _cli(data_dir, "user-block", str(user), str(bot_id)) is True
    bot.error("sendMessage", 403, "BOT_BLOCKED", chat_id=started["chat_id"], text="x")

    assert _cli(data_dir, "set-bot-disabled", str(bot_id)) is True
    bot.error("getMe", 403, "BOT_DISABLED")
    assert _cli(data_dir, "list-bots")[0]["disabled"] is True
    assert _cli(data_dir, "set-bot-disabled", str(bot_id), "--enable") is True
    bot.ok("getMe")

    assert _cli(data_dir, "set-platform-disabled") is True
    bot.error("getMe", 503, "PLATFORM_DISABLED")
    assert _cli(data_dir, "set-platform-disabled", "--enable") is True

    rotated = _cli(data_dir, "rotate-token", str(bot_id))["token"]
    bot.error("getMe", 401, "UNAUTHORIZED")
    bot.token = rotated
    assert bot.ok("getMe")["id"] == bot_id


def test_cli_errors_are_reported(tmp_path):
    data_dir = tmp_path / "cli-data"
    assert botsvc("migrate", env={"BOTSVC_DATA_DIR": str(data_dir)}).returncode == 0
    _cli(data_dir, "create-bot", "dup_bot")
    failure = _cli(data_dir, "create-bot", "dup_bot", ok=False)
    assert failure["error_code"] == "INVALID_PARAMETER"
    assert failure["parameters"]["field"] == "username"
    assert _cli(data_dir, "rotate-token", "4242", ok=False)["parameters"]["field"] == "bot_id"
    bad = _cli(data_dir, "user-start", "1", "1", "--start-parameter", "not ok", ok=False)
    assert bad["parameters"]["field"] in ("start_parameter", "user_id")


def test_cli_migrate(tmp_path):
    env = {**os.environ, "BOTSVC_DATA_DIR": str(tmp_path / "m")}
    done = subprocess.run([BOTSVC, "migrate"], env=env, capture_output=True, text=True,
                          timeout=60)
    assert done.returncode == 0 and "schema version" in done.stdout, done.stderr
    assert (tmp_path / "m" / "botsvc.sqlite3").exists()


def test_operator_form_values_follow_the_same_rules_as_v2(client, operator):
    user_id = operator("createUser")["user_id"]
    bot_id = operator("createBot", username="formrules_bot")["bot"]["id"]
    response = client.post("/manage/v1/userStart", data={"user_id": str(user_id),
                                                          "bot_id": str(bot_id)},
                           headers={"Authorization": f"Bearer {ADMIN_TOKEN}"})
    assert response.status_code == 200, response.get_json()
    assert response.get_json()["result"]["chat_id"].startswith("vc_")
