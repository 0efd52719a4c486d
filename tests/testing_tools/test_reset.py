"""reset: the installation empty again, in one transaction,
the stored files too; settings and the signing key stay; ids go on."""
from __future__ import annotations

import os

import pytest

from botsvc.db import connect
from botsvc.domain.installation import KEPT_TABLES, RESET_TABLES
from tests.support.contract import assert_failure, assert_invalid
from tests.support.media_files import multipart

pytestmark = pytest.mark.call_log   # a reset empties it too


@pytest.fixture
def app(make_app, offline_scanner):
    # Rate limits on, so that there is rate state to forget.
    return make_app(test_tools=True, rate_api_per_sec=1000, rate_sends_per_sec=1000,
                    **offline_scanner)


def table_counts(app) -> dict[str, int]:
    conn = connect(app.config["SETTINGS"].db_path)
    try:
        names = [row[0] for row in conn.execute(
            "SELECT name FROM sqlite_master WHERE type = 'table'")]
        return {name: conn.execute(f"SELECT COUNT(*) FROM {name}").fetchone()[0]
                for name in names}
    finally:
        conn.close()


def test_every_table_is_either_reset_or_deliberately_kept(app):
    tables = set(table_counts(app))
    assert tables == set(RESET_TABLES) | set(KEPT_TABLES), (
        "a table reset does not know about: decide whether reset empties it")
    assert not set(RESET_TABLES) & set(KEPT_TABLES)


def fill_everything(operator, bot, new_bot, start_chat):
    """At least one row in every table reset empties."""
    chat = start_chat(bot)
    sent = bot.ok("sendMessage", chat_id=chat.chat_id, text="tap",
                  reply_markup={"inline_keyboard": [[{"text": "go", "callback_data": "go"}]]})
    operator("userClickButton", user_id=chat.user_id, bot_id=bot.id,
             message_id=sent["message_id"], callback_data="go")
    bot.ok("editMessageText", chat_id=chat.chat_id, message_id=sent["message_id"], text="tapped")
    bot.call("getMe", headers={"Idempotency-Key": "kept-key"})
    file = multipart(bot, "uploadFile", {"file": (b"some notes\n", "notes.txt")}).get_json()
    assert file["ok"], file
    bot.ok("createBroadcast", method="sendMessage", payload={"text": "to all"})
    assert bot.ok("getUpdates", offset=2 ** 62) == []   # an empty poll: counted
    operator("getBotCalls", bot_id=bot.id)             # the call log written
    hooked = new_bot()
    start_chat(hooked)
    hooked.ok("setWebhook", url="https://hooks.example.net/hook",
              secret_token="a-secret-token-of-16")
    operator("injectFault", bot_id=bot.id, method="getMe", error_code="INTERNAL_ERROR")
    operator("redeliverUpdate", bot_id=bot.id, update_id=chat.update_id)   # a replay mark
    operator("advanceClock", seconds=3600)
    operator("setPlatformDisabled", disabled=True)
    return file["result"]


def test_reset_empties_the_installation(app, operator, bot, new_bot, start_chat, db):
    file = fill_everything(operator, bot, new_bot, start_chat)
    db.execute("INSERT INTO webhook_deliveries (bot_id, update_id, attempt, started_at,"
               " duration_ms) VALUES (?, 1, 1, 0, 5)", (bot.id,))
    db.execute("INSERT INTO sandbox_signin_failures (client, failures, last_failure_at,"
               " blocked_until) VALUES ('203.0.113.7', 6, 0, 1)")
    counts = table_counts(app)
    assert [table for table in RESET_TABLES if not counts[table]] == []
    stored = db.execute("SELECT storage_name FROM files").fetchone()[0]
    stored_path = os.path.join(app.config["SETTINGS"].data_dir, "files", stored)
    assert os.path.exists(stored_path)
    secret = open(os.path.join(app.config["SETTINGS"].data_dir, "secret_key"), "rb").read()
    bot_ids = [b["id"] for b in operator("listBots")]

    assert operator("reset") is True

    counts = table_counts(app)
    assert {table: counts[table] for table in RESET_TABLES} == dict.fromkeys(RESET_TABLES, 0)
    assert not os.path.exists(stored_path)
    assert operator("listBots") == [] and operator("getClock")["offset"] == 0
    assert_failure(bot.call("getMe"), 401, "UNAUTHORIZED")      # the platform is on again
    assert_invalid(operator.call("userStart", user_id=1, bot_id=bot.id), "bot_id")
    assert open(os.path.join(app.config["SETTINGS"].data_dir, "secret_key"), "rb").read() \
        == secret
    assert file["file_id"] not in str(table_counts(app))

    again = new_bot()                    # ids go on: nothing old can name something new
    assert again.id > max(bot_ids) and again.ok("getMe")["id"] == again.id
    assert operator("createUser")["user_id"] > 1


def test_reset_of_an_empty_installation(operator):
    assert operator("reset") is True
    assert operator("reset") is True
    assert operator("listBots") == []


def test_reset_takes_no_parameters(operator):
    assert_invalid(operator.call("reset", everything=True), "everything")
