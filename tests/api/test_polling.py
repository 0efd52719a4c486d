"""getUpdates: short polling, offset, limit, timeout, retention,
and the shared per-bot message_id sequence."""
from __future__ import annotations

import pytest

from botsvc.jobs import run_job
from tests.support.contract import assert_invalid


def _make_updates(bot, operator, start_chat, count: int):
    """``count`` updates for ``bot``: a Start then user messages."""
    chat = start_chat(bot)
    for n in range(count - 1):
        operator("userSendMessage", user_id=chat.user_id, bot_id=bot.id, text=f"m{n}")
    return chat


def test_no_updates_is_an_empty_array(bot):
    assert bot.ok("getUpdates") == []


def test_updates_come_in_ascending_order(bot, operator, start_chat):
    _make_updates(bot, operator, start_chat, 5)
    updates = bot.ok("getUpdates")
    ids = [u["update_id"] for u in updates]
    assert len(ids) == 5 and ids == sorted(ids) and len(set(ids)) == 5
    assert [u["message"]["text"] for u in updates] == ["/start", "m0", "m1", "m2", "m3"]


def test_unacknowledged_updates_come_again(bot, operator, start_chat):
    _make_updates(bot, operator, start_chat, 3)
    first = bot.ok("getUpdates")
    assert bot.ok("getUpdates") == first
    assert bot.ok("getUpdates", offset=0) == first


def test_offset_acknowledges_and_deletes_older_updates(bot, operator, start_chat, db):
    _make_updates(bot, operator, start_chat, 4)
    ids = [u["update_id"] for u in bot.ok("getUpdates")]
    rest = bot.ok("getUpdates", offset=ids[2])
    assert [u["update_id"] for u in rest] == ids[2:]
    # acknowledged ones never come back, even with offset 0 or an older offset
    assert [u["update_id"] for u in bot.ok("getUpdates")] == ids[2:]
    assert [u["update_id"] for u in bot.ok("getUpdates", offset=ids[0])] == ids[2:]
    stored = db.execute("SELECT update_id FROM updates WHERE bot_id = ?", (bot.id,)).fetchall()
    assert [row[0] for row in stored] == ids[2:]


def test_offset_past_the_last_update_acknowledges_all(bot, operator, start_chat):
    _make_updates(bot, operator, start_chat, 3)
    last = bot.ok("getUpdates")[-1]["update_id"]
    assert bot.ok("getUpdates", offset=last + 1) == []
    assert bot.ok("getUpdates") == []
    chat_update = operator("userStart", user_id=operator("createUser")["user_id"],
                           bot_id=bot.id)["update_id"]
    assert [u["update_id"] for u in bot.ok("getUpdates")] == [chat_update]


def test_offset_equal_to_an_update_id_keeps_that_update(bot, operator, start_chat):
    _make_updates(bot, operator, start_chat, 2)
    ids = [u["update_id"] for u in bot.ok("getUpdates")]
    assert [u["update_id"] for u in bot.ok("getUpdates", offset=ids[1])] == [ids[1]]


@pytest.mark.parametrize("limit", [1, 2, 3])
def test_limit_is_respected(bot, operator, start_chat, limit):
    _make_updates(bot, operator, start_chat, 4)
    all_ids = [u["update_id"] for u in bot.ok("getUpdates")]
    page = bot.ok("getUpdates", limit=limit)
    assert [u["update_id"] for u in page] == all_ids[:limit]


def test_default_limit_is_100(bot, operator, start_chat):
    _make_updates(bot, operator, start_chat, 103)
    assert len(bot.ok("getUpdates")) == 100
    assert len(bot.ok("getUpdates", limit=100)) == 100
    first_page = bot.ok("getUpdates")
    rest = bot.ok("getUpdates", offset=first_page[-1]["update_id"] + 1)
    assert len(rest) == 3


@pytest.mark.parametrize("params, field", [
    ({"offset": -1}, "offset"),
    ({"offset": -(2 ** 40)}, "offset"),
    ({"limit": 0}, "limit"),
    ({"limit": 101}, "limit"),
    ({"limit": -5}, "limit"),
    ({"timeout": 1}, "timeout"),
    ({"timeout": 30}, "timeout"),
    ({"timeout": -1}, "timeout"),
    ({"timeout": True}, "timeout"),
    ({"timeout": False}, "timeout"),
    ({"timeout": "0"}, "timeout"),
    ({"timeout": 0.0}, "timeout"),
    ({"allowed_updates": ["message"]}, "allowed_updates"),
])
def test_bad_parameters(bot, params, field):
    assert_invalid(bot.call("getUpdates", params), field)


def test_rejected_request_acknowledges_nothing(bot, operator, start_chat):
    _make_updates(bot, operator, start_chat, 2)
    last = bot.ok("getUpdates")[-1]["update_id"]
    assert_invalid(bot.call("getUpdates", {"offset": last + 1, "limit": 0}), "limit")
    assert len(bot.ok("getUpdates")) == 2


def test_timeout_zero_is_allowed(bot, operator, start_chat):
    _make_updates(bot, operator, start_chat, 1)
    assert len(bot.ok("getUpdates", timeout=0, limit=1, offset=0)) == 1


def test_another_bot_never_sees_these_updates(new_bot, operator, start_chat):
    mine, other = new_bot(), new_bot()
    _make_updates(mine, operator, start_chat, 3)
    assert other.ok("getUpdates") == []
    ids = [u["update_id"] for u in mine.ok("getUpdates")]
    # another bot's offset cannot acknowledge them either
    assert other.ok("getUpdates", offset=ids[-1] + 1) == []
    assert [u["update_id"] for u in mine.ok("getUpdates")] == ids


def test_cleanup_removes_updates_older_than_a_day(app, bot, operator, start_chat, db):
    _make_updates(bot, operator, start_chat, 3)
    ids = [u["update_id"] for u in bot.ok("getUpdates")]
    db.execute("UPDATE updates SET created_at = created_at - 86401 WHERE update_id IN (?, ?)",
               (ids[0], ids[1]))
    db.execute("UPDATE updates SET created_at = created_at - 86000 WHERE update_id = ?",
               (ids[2],))
    run_job(app, "delete_expired_records")
    assert [u["update_id"] for u in bot.ok("getUpdates")] == [ids[2]]


def test_cleanup_job_is_registered_with_the_scheduler():
    from botsvc.jobs.schedule import JOBS
    seconds = {job.name: job.seconds for job in JOBS}
    assert seconds["delete_expired_records"] <= 3600


def test_message_ids_are_one_sequence_per_bot(new_bot, operator, start_chat):
    first, second = new_bot(), new_bot()
    a = start_chat(first)                                        # first: 1 (/start)
    sent = first.ok("sendMessage", chat_id=a.chat_id, text="x")  # first: 2
    user_msg = operator("userSendMessage", user_id=a.user_id, bot_id=first.id, text="y")  # 3
    b = start_chat(first)                                        # first: 4 (another chat)
    sent_b = first.ok("sendMessage", chat_id=b.chat_id, text="z")  # first: 5
    start_msg = first.ok("getUpdates")[0]["message"]
    assert [start_msg["message_id"], sent["message_id"], user_msg["message_id"],
            sent_b["message_id"]] == [1, 2, 3, 5]
    c = start_chat(second)                                       # second bot starts at 1
    assert second.ok("sendMessage", chat_id=c.chat_id, text="w")["message_id"] == 2
    assert first.ok("sendMessage", chat_id=a.chat_id, text="v")["message_id"] == 6


def test_failed_send_uses_no_message_id(bot, chat, operator):
    first = bot.ok("sendMessage", chat_id=chat.chat_id, text="one")["message_id"]
    bot.error("sendMessage", 404, "MESSAGE_NOT_FOUND", chat_id=chat.chat_id, text="two",
              reply_to_message_id=999)
    bot.error("sendMessage", 400, "INVALID_PARAMETER", chat_id=chat.chat_id, text="")
    assert bot.ok("sendMessage", chat_id=chat.chat_id, text="three")["message_id"] == first + 1
