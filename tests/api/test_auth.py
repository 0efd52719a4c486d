"""Bearer tokens, the two switches and the order of checks
the contract fixes: platform, token, bot disabled, then the rest."""
from __future__ import annotations

import glob
import logging
import os
import re

import pytest

from botsvc.api.registry import METHODS
from tests.support.contract import ADMIN_TOKEN, assert_failure

TOKEN_SHAPE = re.compile(r"^([1-9][0-9]*):([A-Za-z0-9_-]{43})$")


def _get_me(client, authorization: str | None):
    headers = {} if authorization is None else {"Authorization": authorization}
    return client.post("/v2/getMe", json={}, headers=headers)


def test_token_shape(bot):
    match = TOKEN_SHAPE.match(bot.token)
    assert match and int(match.group(1)) == bot.id


def test_tokens_are_unique_per_bot(new_bot):
    first, second = new_bot(), new_bot()
    assert first.token != second.token
    assert first.token.split(":")[1] != second.token.split(":")[1]


def test_valid_token_works(bot):
    assert bot.ok("getMe")["id"] == bot.id


@pytest.mark.parametrize("authorization", [
    None, "", "Bearer", "Bearer ", "Basic dXNlcjpwYXNz", "Token {token}", "{token}",
    "Bearer {token}x", "Bearer x{token}", "Bearer {token_upper}", "Bearer {secret}",
    "Bearer {id}:", "Bearer :{secret}", "Bearer {id}:{short}", "Bearer {id} {secret}",
    "Bearer 0{id}:{secret}", "Bearer -{id}:{secret}", "Bearer {id}:{secret}=",
    "Bearer {token},{token}", "Bearer {token} extra",
])
def test_malformed_or_missing_tokens_are_unauthorized(bot, authorization):
    bot_id, secret = bot.token.split(":")
    if authorization is not None:
        authorization = authorization.format(
            token=bot.token, token_upper=bot.token.upper(), secret=secret, id=bot_id,
            short=secret[:42])
    assert_failure(_get_me(bot.client, authorization), 401, "UNAUTHORIZED")


def test_right_shape_wrong_secret_is_unauthorized(bot):
    bot_id, secret = bot.token.split(":")
    flipped = ("A" if secret[0] != "A" else "B") + secret[1:]
    assert_failure(_get_me(bot.client, f"Bearer {bot_id}:{flipped}"), 401, "UNAUTHORIZED")


def test_another_bots_secret_does_not_open_this_bot(new_bot):
    first, second = new_bot(), new_bot()
    mixed = f"{first.id}:{second.token.split(':')[1]}"
    assert_failure(_get_me(first.client, f"Bearer {mixed}"), 401, "UNAUTHORIZED")


@pytest.mark.parametrize("bot_id", ["999999", "9223372036854775807", "9223372036854775808",
                                    "9999999999999999999"])
def test_unknown_bot_id_is_unauthorized(bot, bot_id):
    secret = bot.token.split(":")[1]
    assert_failure(_get_me(bot.client, f"Bearer {bot_id}:{secret}"), 401, "UNAUTHORIZED")


def test_token_in_the_query_string_is_not_accepted(bot):
    response = bot.client.post(f"/v2/getMe?token={bot.token}", json={})
    assert_failure(response, 401, "UNAUTHORIZED")


def test_unauthorized_comes_before_body_parsing(client):
    assert_failure(client.post("/v2/getUpdates", data=b"{",
                               headers={"Authorization": "Bearer nope"}), 401, "UNAUTHORIZED")


def test_rotation_invalidates_the_old_token_at_once(bot, operator):
    old = bot.token
    new = operator("rotateToken", bot_id=bot.id)["token"]
    assert new != old and TOKEN_SHAPE.match(new).group(1) == str(bot.id)
    assert_failure(_get_me(bot.client, f"Bearer {old}"), 401, "UNAUTHORIZED")
    response = _get_me(bot.client, f"Bearer {new}")
    assert response.status_code == 200 and response.get_json()["result"]["id"] == bot.id
    newer = operator("rotateToken", bot_id=bot.id)["token"]
    assert_failure(_get_me(bot.client, f"Bearer {new}"), 401, "UNAUTHORIZED")
    assert _get_me(bot.client, f"Bearer {newer}").status_code == 200


def _every_method():
    return sorted(METHODS)


def test_disabled_bot_gets_bot_disabled_on_every_method(bot, chat, operator):
    assert operator("setBotDisabled", bot_id=bot.id, disabled=True) is True
    for name in _every_method():
        assert_failure(bot.call(name, {}), 403, "BOT_DISABLED")
        # even with parameters that would otherwise be invalid
        assert_failure(bot.call(name, {"no_such_parameter": True}), 403, "BOT_DISABLED")
    assert_failure(bot.raw("sendMessage", b"{not json"), 403, "BOT_DISABLED")
    assert operator("setBotDisabled", bot_id=bot.id, disabled=False) is True
    assert bot.ok("sendMessage", chat_id=chat.chat_id, text="back")["text"] == "back"


def test_disabled_bot_with_a_wrong_token_is_unauthorized(bot, operator):
    operator("setBotDisabled", bot_id=bot.id, disabled=True)
    bot_id, secret = bot.token.split(":")
    wrong = f"{bot_id}:{'A' if secret[0] != 'A' else 'B'}{secret[1:]}"
    assert_failure(_get_me(bot.client, f"Bearer {wrong}"), 401, "UNAUTHORIZED")
    assert_failure(_get_me(bot.client, None), 401, "UNAUTHORIZED")


def test_disabling_one_bot_leaves_the_others(new_bot, operator):
    first, second = new_bot(), new_bot()
    operator("setBotDisabled", bot_id=first.id, disabled=True)
    first.error("getMe", 403, "BOT_DISABLED")
    assert second.ok("getMe")["id"] == second.id


def test_disabled_platform_comes_first_on_every_method(bot, operator, client):
    assert operator("setPlatformDisabled", disabled=True) is True
    for name in _every_method():
        assert_failure(bot.call(name, {}), 503, "PLATFORM_DISABLED")
        assert_failure(client.post(f"/v2/{name}", json={}), 503, "PLATFORM_DISABLED")
        assert_failure(client.post(f"/v2/{name}", json={},
                                   headers={"Authorization": "Bearer 1:" + "x" * 43}),
                       503, "PLATFORM_DISABLED")
    operator("setBotDisabled", bot_id=bot.id, disabled=True)
    bot.error("getMe", 503, "PLATFORM_DISABLED")
    # The operator side stays reachable, so the switch can be turned back.
    assert operator("setPlatformDisabled", disabled=False) is True
    bot.error("getMe", 403, "BOT_DISABLED")
    operator("setBotDisabled", bot_id=bot.id, disabled=False)
    assert bot.ok("getMe")["id"] == bot.id


def test_the_database_holds_no_token_in_clear(app, new_bot, operator):
    bots = [new_bot() for _ in range(3)]
    rotated = operator("rotateToken", bot_id=bots[0].id)["token"]
    secrets = [b.token.split(":")[1] for b in bots] + [rotated.split(":")[1]]
    data_dir = app.config["SETTINGS"].data_dir
    files = glob.glob(f"{data_dir}/**/*", recursive=True)
    blobs = b"".join(open(path, "rb").read() for path in files if os.path.isfile(path))
    assert bots[2].bot["username"].encode() in blobs  # the scan does see the bots' rows
    for secret in secrets:
        assert secret.encode() not in blobs
        assert secret[:20].encode() not in blobs


def test_tokens_never_reach_the_logs(bot, operator, chat, caplog):
    caplog.set_level(logging.DEBUG)
    rotated = operator("rotateToken", bot_id=bot.id)["token"]
    stale = bot.token
    bot.token = rotated
    bot.ok("getMe")
    bot.ok("sendMessage", chat_id=chat.chat_id, text="hello")
    bot.error("nope", 404, "METHOD_NOT_FOUND")
    assert_failure(_get_me(bot.client, f"Bearer {stale}"), 401, "UNAUTHORIZED")
    bot.raw("getMe", b"{")
    for token in (stale, rotated):
        assert token.split(":")[1] not in caplog.text


def test_manage_is_not_found_without_an_admin_token(make_app):
    client = make_app(admin_token=None).test_client()
    for name in ("createBot", "listBots", "setPlatformDisabled", "noSuchMethod"):
        for headers in ({}, {"Authorization": f"Bearer {ADMIN_TOKEN}"},
                        {"Authorization": "Bearer "}):
            assert_failure(client.post(f"/manage/v1/{name}", json={}, headers=headers),
                           404, "METHOD_NOT_FOUND")


@pytest.mark.parametrize("authorization", [
    None, "", "Bearer", f"Bearer {ADMIN_TOKEN}x", f"Bearer {ADMIN_TOKEN[:-1]}",
    f"Basic {ADMIN_TOKEN}", ADMIN_TOKEN,
])
def test_manage_needs_the_admin_token(client, authorization):
    headers = {} if authorization is None else {"Authorization": authorization}
    assert_failure(client.post("/manage/v1/listBots", json={}, headers=headers),
                   401, "UNAUTHORIZED")


def test_bot_tokens_do_not_open_manage(bot, client):
    response = client.post("/manage/v1/listBots", json={},
                           headers={"Authorization": f"Bearer {bot.token}"})
    assert_failure(response, 401, "UNAUTHORIZED")


def test_admin_token_does_not_open_v2(client):
    assert_failure(client.post("/v2/getMe", json={},
                               headers={"Authorization": f"Bearer {ADMIN_TOKEN}"}),
                   401, "UNAUTHORIZED")
