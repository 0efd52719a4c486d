"""userGetChat pages through a chat like a messenger (the contract): the newest
``limit`` messages (1 to 1000, default 100), or the newest older than
``before_message_id``, oldest first; ``has_more``; the callback answers of the
returned messages only. Its queries read an index range, never the whole
history (EXPLAIN QUERY PLAN)."""
from __future__ import annotations

import pytest

from botsvc.db import connect, transaction
from botsvc.domain import chats, messages
from botsvc.domain.chats import require_chat
from tests.support.contract import assert_invalid
from tests.support.query_plans import full_scans, plan, statements_of

KEYBOARD = {"inline_keyboard": [[{"text": "Go", "callback_data": "go"}]]}


def page(operator, chat, **params):
    return operator("userGetChat", user_id=chat.user_id, bot_id=chat.bot_id, **params)


@pytest.fixture
def chat(app, bot, start_chat):
    """A chat of ``/start`` (message 1) and 1001 texts from the bot (2 to 1002),
    sent through the domain's own send in one transaction (1001 API calls
    would cost seconds per test and prove nothing more)."""
    started = start_chat(bot)
    conn = connect(app.config["SETTINGS"].db_path)
    try:
        with transaction(conn):
            row = require_chat(conn, bot.id, started.chat_id)
            for i in range(1001):
                messages.send_message(conn, bot.id, row, type="text", content={"text": f"t{i}"})
    finally:
        conn.close()
    assert bot.ok("sendMessage", chat_id=started.chat_id, text="probe")["message_id"] == 1003
    bot.ok("deleteMessage", chat_id=started.chat_id, message_id=1003)
    started.bot_id = bot.id
    return started


def ids(view) -> list[int]:
    return [m["message_id"] for m in view["messages"]]


def test_the_default_page_is_the_newest_hundred_oldest_first(operator, chat):
    view = page(operator, chat)
    assert ids(view) == list(range(903, 1003))
    assert view["has_more"] is True
    assert view["messages"][-1]["text"] == "t1000" and view["callback_answers"] == []
    assert set(view) == {"chat_id", "status", "messages", "callback_answers", "has_more"}


@pytest.mark.parametrize("limit, expected", [(1, [1002]), (1000, list(range(3, 1003)))])
def test_limit_bounds_accepted(operator, chat, limit, expected):
    view = page(operator, chat, limit=limit)
    assert ids(view) == expected and view["has_more"] is True


def test_the_last_page_says_there_is_no_more(operator, chat):
    newest = page(operator, chat, limit=1000)
    rest = page(operator, chat, limit=1000, before_message_id=newest["messages"][0]["message_id"])
    assert ids(rest) == [1, 2] and rest["has_more"] is False
    assert rest["messages"][0]["text"] == "/start"
    # Exactly the rest of the history: no more either.
    assert page(operator, chat, limit=2, before_message_id=3)["has_more"] is False
    assert page(operator, chat, limit=1, before_message_id=3)["has_more"] is True
    empty = page(operator, chat, before_message_id=1)
    assert empty["messages"] == [] and empty["has_more"] is False


@pytest.mark.parametrize("limit", [0, 1001, -1, "5", 2.5, True, None])
def test_limit_out_of_bounds_is_invalid(operator, chat, limit):
    assert_invalid(operator.call("userGetChat", user_id=chat.user_id, bot_id=chat.bot_id,
                                 limit=limit), "limit")


@pytest.mark.parametrize("before", [0, -3, "2", 1004, 2**63])
def test_before_message_id_not_a_message_id_of_the_chat(operator, chat, before):
    assert_invalid(operator.call("userGetChat", user_id=chat.user_id, bot_id=chat.bot_id,
                                 before_message_id=before), "before_message_id")


def test_before_message_id_of_another_chat_or_bot(operator, bot, new_bot, start_chat):
    mine = start_chat(bot)                      # message 1 of the bot
    start_chat(bot)                             # message 2: the same bot, another chat
    bot.ok("sendMessage", chat_id=mine.chat_id, text="hi")           # message 3
    other_bot = new_bot()
    theirs = start_chat(other_bot, user_id=mine.user_id)
    for i in range(5):                          # the other bot's messages 2 to 6
        other_bot.ok("sendMessage", chat_id=theirs.chat_id, text=f"x{i}")
    for before, why in [(2, "the same bot's chat with another user"),
                        (6, "another bot's message (ids are per bot)")]:
        failure = assert_invalid(operator.call("userGetChat", user_id=mine.user_id,
                                               bot_id=bot.id, before_message_id=before),
                                 "before_message_id")
        assert failure["error_code"] == "INVALID_PARAMETER", why
    # Ids are per bot: the other bot's chat has its own message 3.
    assert ids(operator("userGetChat", user_id=mine.user_id, bot_id=other_bot.id,
                        before_message_id=3)) == [1, 2]


def test_a_deleted_message_is_still_a_page_boundary(operator, bot, start_chat):
    chat = start_chat(bot)
    sent = [bot.ok("sendMessage", chat_id=chat.chat_id, text=f"t{i}") for i in range(4)]
    bot.ok("deleteMessage", chat_id=chat.chat_id, message_id=sent[2]["message_id"])
    before = operator("userGetChat", user_id=chat.user_id, bot_id=bot.id,
                      before_message_id=sent[2]["message_id"])
    assert [m["text"] for m in before["messages"]] == ["/start", "t0", "t1"]
    # Deleted messages are not counted in a page: two visible ones are the two newest.
    newest = operator("userGetChat", user_id=chat.user_id, bot_id=bot.id, limit=2)
    assert [m["text"] for m in newest["messages"]] == ["t1", "t3"]
    assert newest["has_more"] is True


def test_callback_answers_are_those_of_the_page(operator, bot, start_chat):
    chat = start_chat(bot)
    sent = [bot.ok("sendMessage", chat_id=chat.chat_id, text=f"t{i}", reply_markup=KEYBOARD)
            for i in range(3)]
    for message in (sent[2], sent[0], sent[1]):   # answered in this order
        query = operator("userClickButton", user_id=chat.user_id, bot_id=bot.id,
                         message_id=message["message_id"], callback_data="go")
        bot.ok("answerCallbackQuery", callback_query_id=query["callback_query_id"],
               text=message["text"])
    view = operator("userGetChat", user_id=chat.user_id, bot_id=bot.id, limit=2)
    assert [m["text"] for m in view["messages"]] == ["t1", "t2"]
    assert [a["text"] for a in view["callback_answers"]] == ["t2", "t1"]
    assert set(view["callback_answers"][0]) == {"callback_query_id", "message_id", "data",
                                                "text", "show_alert", "date"}
    older = operator("userGetChat", user_id=chat.user_id, bot_id=bot.id,
                     before_message_id=sent[1]["message_id"])
    assert [a["text"] for a in older["callback_answers"]] == ["t0"]


def test_unknown_user_or_chat_still_answer_as_before(operator, bot, new_user):
    assert_invalid(operator.call("userGetChat", user_id=new_user(), bot_id=999,
                                 limit=5), "bot_id")
    response = operator.call("userGetChat", user_id=new_user(), bot_id=bot.id, limit=5)
    assert response.status_code == 404
    assert response.get_json()["error_code"] == "CHAT_NOT_FOUND"


# -- the cost does not grow with the history -------------------------------------

def test_every_query_of_a_page_reads_an_index_range(app, operator, bot, start_chat):
    chat = start_chat(bot)
    sent = [bot.ok("sendMessage", chat_id=chat.chat_id, text=f"t{i}", reply_markup=KEYBOARD)
            for i in range(30)]
    query = operator("userClickButton", user_id=chat.user_id, bot_id=bot.id,
                     message_id=sent[-1]["message_id"], callback_data="go")
    bot.ok("answerCallbackQuery", callback_query_id=query["callback_query_id"], text="ok")
    conn = connect(app.config["SETTINGS"].db_path)
    try:
        pages = [lambda: chats.user_view(conn, bot.id, chat.user_id, 10),
                 lambda: chats.user_view(conn, bot.id, chat.user_id, 10,
                                         sent[5]["message_id"])]
        for read in pages:
            statements = statements_of(conn, read)
            for statement in statements:
                assert full_scans(conn, statement) == [], statement
            # The two that grow with a chat read a range bounded by the page:
            # the newest messages below the boundary, the answers by message.
            details = [d for s in statements for d in plan(conn, s)]
            assert "SEARCH messages USING INDEX messages_by_chat (chat_ref=? AND message_id<?)" \
                in details
            assert "SEARCH callback_queries USING INDEX callback_queries_by_message" \
                   " (chat_ref=? AND message_id=?)" in details
    finally:
        conn.close()


def test_the_plan_check_sees_a_full_scan(app, bot, start_chat):
    """The plan check above can fail: a query on an unindexed column is a full SCAN."""
    start_chat(bot)
    conn = connect(app.config["SETTINGS"].db_path)
    try:
        assert full_scans(conn, "SELECT * FROM messages WHERE content LIKE '%x%'") == [
            "SCAN messages"]
    finally:
        conn.close()
