"""getSubscribers: active members in pages, the cursor being a public chat_id."""
import pytest

from botsvc.devkit.members import add_members


def all_pages(bot, **params) -> list[dict]:
    seen, cursor = [], None
    while True:
        result = bot.ok("getSubscribers", **params, **({"cursor": cursor} if cursor else {}))
        seen.extend(result["subscribers"])
        cursor = result["next_cursor"]
        if cursor is None:
            return seen


def test_lists_active_members_in_chat_id_order_with_started_at(bot, start_chat):
    chats = [start_chat(bot) for _ in range(3)]
    result = bot.ok("getSubscribers")
    assert result["next_cursor"] is None
    assert [s["chat_id"] for s in result["subscribers"]] == sorted(c.chat_id for c in chats)
    for subscriber in result["subscribers"]:
        assert set(subscriber) == {"chat_id", "started_at"}
        assert isinstance(subscriber["started_at"], int)


def test_stopped_blocked_and_other_bots_members_are_left_out(bot, new_bot, start_chat, operator):
    stays = start_chat(bot)
    stopped, blocked = start_chat(bot), start_chat(bot)
    operator("userStop", user_id=stopped.user_id, bot_id=bot.id)
    operator("userBlock", user_id=blocked.user_id, bot_id=bot.id)
    start_chat(new_bot())
    assert [s["chat_id"] for s in bot.ok("getSubscribers")["subscribers"]] == [stays.chat_id]


def test_no_members_is_an_empty_last_page(bot):
    assert bot.ok("getSubscribers") == {"subscribers": [], "next_cursor": None}


def test_pages_walk_every_member_once_and_end_with_null(bot, start_chat):
    chats = sorted(start_chat(bot).chat_id for _ in range(5))
    first = bot.ok("getSubscribers", limit=2)
    assert [s["chat_id"] for s in first["subscribers"]] == chats[:2]
    assert first["next_cursor"] == chats[1]  # the subscriber cursor is a public chat_id
    assert [s["chat_id"] for s in all_pages(bot, limit=2)] == chats


def test_a_page_that_reaches_the_end_exactly_has_no_next_cursor(bot, start_chat):
    for _ in range(4):
        start_chat(bot)
    first = bot.ok("getSubscribers", limit=2)
    second = bot.ok("getSubscribers", limit=2, cursor=first["next_cursor"])
    assert len(second["subscribers"]) == 2 and second["next_cursor"] is None
    assert bot.ok("getSubscribers", limit=4)["next_cursor"] is None


def test_default_limit_is_100(app, bot):
    add_members(app.config["SETTINGS"].db_path, bot.id, 101)
    first = bot.ok("getSubscribers")
    assert len(first["subscribers"]) == 100 and first["next_cursor"] is not None
    rest = bot.ok("getSubscribers", cursor=first["next_cursor"])
    assert len(rest["subscribers"]) == 1 and rest["next_cursor"] is None


def test_cursor_stays_valid_when_that_member_stops(bot, start_chat, operator):
    chats = sorted((start_chat(bot) for _ in range(3)), key=lambda c: c.chat_id)
    first = bot.ok("getSubscribers", limit=1)
    operator("userStop", user_id=chats[0].user_id, bot_id=bot.id)
    rest = bot.ok("getSubscribers", limit=5, cursor=first["next_cursor"])
    assert [s["chat_id"] for s in rest["subscribers"]] == [c.chat_id for c in chats[1:]]


def test_null_cursor_is_the_first_page(bot, start_chat):
    chat = start_chat(bot)
    assert bot.ok("getSubscribers", cursor=None)["subscribers"][0]["chat_id"] == chat.chat_id


@pytest.mark.parametrize("limit", [0, 101, -1, "5", 2.0, True, None])
def test_limit_outside_1_to_100_is_invalid(bot, limit):
    body = bot.error("getSubscribers", 400, "INVALID_PARAMETER", limit=limit)
    assert body["parameters"]["field"] == "limit"


@pytest.mark.parametrize("cursor", ["", "garbage", "vc_123", "VC_" + "a" * 40, 7, ["x"]])
def test_a_cursor_that_is_not_one_we_gave_is_invalid(bot, cursor):
    body = bot.error("getSubscribers", 400, "INVALID_PARAMETER", cursor=cursor)
    assert body["parameters"]["field"] == "cursor"


def test_unknown_parameters_are_rejected(bot):
    body = bot.error("getSubscribers", 400, "INVALID_PARAMETER", offset=3)
    assert body["parameters"]["field"] == "offset"
