"""Deleted messages keep only a tombstone, and chat history is kept only as
long as BOTSVC_HISTORY_RETENTION_DAYS says (issue 13 point 5)."""
from __future__ import annotations

import sqlite3
from pathlib import Path

import pytest

from botsvc.db import connect
from botsvc.domain import messages
from botsvc.jobs import run_job
from botsvc.migrations import migrate, migration_files
from tests.support.contract import BotClient, Operator, assert_failure

DAY = 86400
KEYBOARD = {"inline_keyboard": [[{"text": "Yes", "callback_data": "yes"}]]}
CARD = {"type": "info", "title": "Order 42", "text": "secret details"}


def _row(db, bot, message_id) -> dict:
    row = db.execute("SELECT * FROM messages WHERE bot_id = ? AND message_id = ?",
                     (bot.id, message_id)).fetchone()
    return dict(row) if row else None


def _view(operator, bot, chat) -> list[int]:
    found = operator("userGetChat", user_id=chat.user_id, bot_id=bot.id)["messages"]
    return [m["message_id"] for m in found]


def test_a_deleted_message_keeps_only_its_tombstone(bot, chat, operator, db):
    asked = operator("userSendMessage", user_id=chat.user_id, bot_id=bot.id, text="question")
    text = bot.ok("sendMessage", chat_id=chat.chat_id, text="private answer",
                  reply_markup=KEYBOARD, reply_to_message_id=asked["message_id"])
    card = bot.ok("sendCard", chat_id=chat.chat_id, card=CARD)
    bot.ok("editMessageText", chat_id=chat.chat_id, message_id=text["message_id"], text="edited")
    before = _row(db, bot, text["message_id"])
    assert bot.ok("deleteMessage", chat_id=chat.chat_id, message_id=text["message_id"]) is True
    assert bot.ok("deleteMessages", chat_id=chat.chat_id, message_ids=[card["message_id"]]) is True
    for sent in (text, card):
        row = _row(db, bot, sent["message_id"])
        assert row["content"] == "{}" and row["type"] == "deleted"
        assert row["reply_to_message_id"] is None and row["edit_date"] is None
        assert row["media_group_id"] is None and row["deleted_at"] is not None
        assert (row["chat_ref"], row["from_bot"]) == (before["chat_ref"], 1)
    assert _row(db, bot, text["message_id"])["date"] == before["date"]
    stored = " ".join(str(value) for value in _row(db, bot, text["message_id"]).values())
    assert "private" not in stored and "yes" not in stored
    # The contract reads the same as before.
    assert bot.ok("deleteMessage", chat_id=chat.chat_id, message_id=text["message_id"]) is True
    assert bot.ok("deleteMessages", chat_id=chat.chat_id,
                  message_ids=[text["message_id"], card["message_id"]]) is True
    bot.error("editMessageText", 404, "MESSAGE_NOT_FOUND", chat_id=chat.chat_id,
              message_id=text["message_id"], text="again")
    bot.error("sendMessage", 404, "MESSAGE_NOT_FOUND", chat_id=chat.chat_id, text="re",
              reply_to_message_id=card["message_id"])
    clicked = operator.call("userClickButton", user_id=chat.user_id, bot_id=bot.id,
                            message_id=text["message_id"], callback_data="yes")
    assert_failure(clicked, 404, "MESSAGE_NOT_FOUND")
    shown = _view(operator, bot, chat)
    assert asked["message_id"] in shown
    assert text["message_id"] not in shown and card["message_id"] not in shown


def _legacy_database(path: Path) -> None:
    conn = sqlite3.connect(str(path), isolation_level=None)
    for number, file in migration_files():
        if number <= 5:
            conn.executescript(Path(file).read_text())
    conn.executescript("""
        INSERT INTO bots (id, username, display_name, token_hash, created_at)
            VALUES (1, 'old_bot', 'Old', x'00', 0);
        INSERT INTO users (id, created_at) VALUES (1, 0);
        INSERT INTO chats (id, chat_id, bot_id, user_id, status, started_at)
            VALUES (1, 'vc_' || hex(randomblob(20)), 1, 1, 'active', 0);
        INSERT INTO messages (bot_id, message_id, chat_ref, from_bot, type, date, content,
                              reply_to_message_id, media_group_id, edit_date, deleted_at)
            VALUES (1, 1, 1, 1, 'photo', 100, '{"caption": "gone", "media": {"file_id": "f"}}',
                    NULL, 'g1', 150, 200),
                   (1, 2, 1, 1, 'text', 100, '{"text": "kept"}', 1, NULL, NULL, NULL);
    """)
    conn.close()


def test_the_migration_turns_deleted_rows_into_tombstones(tmp_path):
    path = tmp_path / "db.sqlite3"
    _legacy_database(path)
    migrate(str(path))
    conn = connect(str(path))
    deleted, kept = conn.execute("SELECT * FROM messages ORDER BY message_id").fetchall()
    assert (deleted["content"], deleted["type"], deleted["media_group_id"],
            deleted["edit_date"], deleted["deleted_at"], deleted["date"]) == (
        "{}", "deleted", None, None, 200, 100)
    assert (kept["content"], kept["type"], kept["reply_to_message_id"]) == (
        '{"text": "kept"}', "text", 1)


# -- history retention ---------------------------------------------------------------

def _age(db, bot, message_ids, days: int) -> None:
    marks = ",".join("?" * len(message_ids))
    db.execute(f"UPDATE messages SET date = date - ? WHERE bot_id = ? AND message_id IN ({marks})",
               (days * DAY, bot.id, *message_ids))


@pytest.fixture
def kept_30_days(make_app):
    return make_app(history_retention_days=30)


def _bot_and_chat(app):
    operator = Operator(app.test_client())
    created = operator("createBot", username="history_bot")
    bot = BotClient(operator.client, created["bot"], created["token"])
    user = operator("createUser")["user_id"]
    chat_id = operator("userStart", user_id=user, bot_id=bot.id)["chat_id"]
    return operator, bot, user, chat_id


def test_history_older_than_the_retention_is_removed(kept_30_days, monkeypatch):
    app = kept_30_days
    operator, bot, user, chat_id = _bot_and_chat(app)
    old = [bot.ok("sendMessage", chat_id=chat_id, text=f"old {n}", reply_markup=KEYBOARD)
           for n in range(5)]
    old_ids = [m["message_id"] for m in old]
    query = operator("userClickButton", user_id=user, bot_id=bot.id, message_id=old_ids[0],
                     callback_data="yes")["callback_query_id"]
    bot.ok("answerCallbackQuery", callback_query_id=query, text="noted")
    deleted = bot.ok("sendMessage", chat_id=chat_id, text="deleted, old")["message_id"]
    bot.ok("deleteMessage", chat_id=chat_id, message_id=deleted)
    fresh = bot.ok("sendMessage", chat_id=chat_id, text="fresh",
                   reply_to_message_id=old_ids[1])
    db = connect(app.config["SETTINGS"].db_path)
    start_id = db.execute("SELECT MIN(message_id) FROM messages").fetchone()[0]
    _age(db, bot, [start_id, *old_ids, deleted], 31)
    db.execute("UPDATE callback_queries SET created_at = created_at - ?", (31 * DAY,))
    monkeypatch.setattr(messages, "HISTORY_BATCH", 2)  # several batches, each its own write
    run_job(app, "delete_old_history")
    rows = [r[0] for r in db.execute("SELECT message_id FROM messages ORDER BY message_id")]
    assert rows == [fresh["message_id"]]
    assert db.execute("SELECT COUNT(*) FROM callback_queries").fetchone()[0] == 0
    db.close()
    view = operator("userGetChat", user_id=user, bot_id=bot.id)
    assert [m["message_id"] for m in view["messages"]] == [fresh["message_id"]]
    assert view["messages"][0]["reply_to_message_id"] == old_ids[1]  # the reference stays
    assert view["callback_answers"] == []
    # A removed message is no longer there for any method.
    bot.error("editMessageText", 404, "MESSAGE_NOT_FOUND", chat_id=chat_id,
              message_id=old_ids[2], text="late edit")
    bot.error("deleteMessage", 404, "MESSAGE_NOT_FOUND", chat_id=chat_id, message_id=deleted)
    bot.error("sendMessage", 404, "MESSAGE_NOT_FOUND", chat_id=chat_id, text="re",
              reply_to_message_id=old_ids[3])
    assert_failure(operator.call("userClickButton", user_id=user, bot_id=bot.id,
                                 message_id=old_ids[4], callback_data="yes"),
                   404, "MESSAGE_NOT_FOUND")


def test_broadcast_recipients_keep_the_message_id_of_a_removed_message(kept_30_days):
    app = kept_30_days
    operator, bot, user, chat_id = _bot_and_chat(app)
    broadcast = bot.ok("createBroadcast", method="sendMessage", payload={"text": "news"})
    run_job(app, "deliver_due_broadcasts")
    page = bot.ok("getBroadcastRecipients", broadcast_id=broadcast["broadcast_id"])
    sent_id = page["recipients"][0]["message_id"]
    db = connect(app.config["SETTINGS"].db_path)
    db.execute("UPDATE messages SET date = date - ?", (31 * DAY,))
    db.close()
    run_job(app, "delete_old_history")
    again = bot.ok("getBroadcastRecipients", broadcast_id=broadcast["broadcast_id"])
    assert again == page
    bot.error("deleteMessage", 404, "MESSAGE_NOT_FOUND", chat_id=chat_id, message_id=sent_id)


def test_history_is_kept_forever_by_default(app, bot, chat, db):
    sent = bot.ok("sendMessage", chat_id=chat.chat_id, text="ancient")
    db.execute("UPDATE messages SET date = date - ?", (3650 * DAY,))
    run_job(app, "delete_old_history")
    assert _row(db, bot, sent["message_id"]) is not None


def test_the_retention_job_runs_once_per_interval(kept_30_days):
    app = kept_30_days
    _, bot, _, chat_id = _bot_and_chat(app)
    run_job(app, "delete_old_history")
    sent = bot.ok("sendMessage", chat_id=chat_id, text="aged after the first pass")
    db = connect(app.config["SETTINGS"].db_path)
    db.execute("UPDATE messages SET date = date - ?", (31 * DAY,))
    run_job(app, "delete_old_history")  # claimed already in this interval: nothing runs
    assert _row(db, bot, sent["message_id"]) is not None
    db.execute("UPDATE periodic_jobs SET next_run_at = 0 WHERE name = 'delete_old_history'")
    run_job(app, "delete_old_history")
    assert _row(db, bot, sent["message_id"]) is None
    db.close()


def test_retention_reads_its_setting_from_the_environment():
    from botsvc.config import Settings

    settings = Settings.from_env({"BOTSVC_HISTORY_RETENTION_DAYS": "90",
                                  "BOTSVC_SECRET_KEY": "k"})
    assert settings.history_retention_days == 90
    assert Settings.from_env({"BOTSVC_SECRET_KEY": "k"}).history_retention_days == 0


def test_the_retention_query_uses_the_date_index(db):
    plan = " ".join(row[3] for row in db.execute(
        "EXPLAIN QUERY PLAN SELECT bot_id, message_id FROM messages WHERE date < 1 LIMIT 10"))
    assert "messages_by_date" in plan
