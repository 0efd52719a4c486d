"""deleteMessage and deleteMessages: own messages of one chat only, all or
nothing, true again for deleted messages, allowed after Stop and block."""
import pytest


def visible_ids(operator, chat, bot) -> list[int]:
    """Every message the user sees (one page: these chats hold far fewer than 1000)."""
    view = operator("userGetChat", user_id=chat.user_id, bot_id=bot.id, limit=1000)
    assert view["has_more"] is False
    return [m["message_id"] for m in view["messages"]]


def send_some(bot, chat, count: int) -> list[int]:
    return [bot.ok("sendMessage", chat_id=chat.chat_id, text=f"m{i}")["message_id"]
            for i in range(count)]


def test_delete_message_hides_it_from_the_user(bot, chat, operator):
    keep, gone = send_some(bot, chat, 2)
    assert bot.ok("deleteMessage", chat_id=chat.chat_id, message_id=gone) is True
    assert visible_ids(operator, chat, bot) == [1, keep]


def test_deleting_again_returns_true(bot, chat, operator):
    [gone] = send_some(bot, chat, 1)
    assert bot.ok("deleteMessage", chat_id=chat.chat_id, message_id=gone) is True
    assert bot.ok("deleteMessage", chat_id=chat.chat_id, message_id=gone) is True
    assert gone not in visible_ids(operator, chat, bot)


def test_cards_and_messages_with_buttons_are_deleted_too(bot, chat, operator):
    card = bot.ok("sendCard", chat_id=chat.chat_id, card={"type": "info", "title": "T"},
                  reply_markup={"inline_keyboard": [[{"text": "x", "callback_data": "x"}]]})
    assert bot.ok("deleteMessage", chat_id=chat.chat_id, message_id=card["message_id"])
    assert visible_ids(operator, chat, bot) == [1]


@pytest.mark.parametrize("action", ["userStop", "userBlock"])
def test_deleting_stays_allowed_after_stop_and_block(bot, chat, operator, action):
    first, second, third = send_some(bot, chat, 3)
    operator(action, user_id=chat.user_id, bot_id=bot.id)
    assert bot.ok("deleteMessage", chat_id=chat.chat_id, message_id=first) is True
    assert bot.ok("deleteMessages", chat_id=chat.chat_id, message_ids=[second, third]) is True
    assert not {first, second, third} & set(visible_ids(operator, chat, bot))


def test_user_messages_cannot_be_deleted(bot, chat, operator):
    received = operator("userSendMessage", user_id=chat.user_id, bot_id=bot.id, text="mine")
    body = bot.error("deleteMessage", 404, "MESSAGE_NOT_FOUND", chat_id=chat.chat_id,
                     message_id=received["message_id"])
    assert body["parameters"]["field"] == "message_id"
    bot.error("deleteMessage", 404, "MESSAGE_NOT_FOUND", chat_id=chat.chat_id, message_id=1)
    assert visible_ids(operator, chat, bot) == [1, received["message_id"]]


def test_unknown_message_is_not_found(bot, chat):
    bot.error("deleteMessage", 404, "MESSAGE_NOT_FOUND", chat_id=chat.chat_id, message_id=999)


def test_another_bots_message_id_is_not_found(bot, chat, operator, new_bot, start_chat):
    other_bot = new_bot()
    other_chat = start_chat(other_bot, user_id=chat.user_id)
    theirs = send_some(other_bot, other_chat, 5)[-1]
    bot.error("deleteMessage", 404, "MESSAGE_NOT_FOUND", chat_id=chat.chat_id, message_id=theirs)
    view = operator("userGetChat", user_id=chat.user_id, bot_id=other_bot.id)
    assert theirs in [m["message_id"] for m in view["messages"]]


def test_another_bots_chat_is_not_found(bot, chat, new_bot, start_chat):
    other_bot = new_bot()
    other_chat = start_chat(other_bot, user_id=chat.user_id)
    theirs = send_some(other_bot, other_chat, 1)[0]
    body = bot.error("deleteMessage", 404, "CHAT_NOT_FOUND", chat_id=other_chat.chat_id,
                     message_id=theirs)
    assert body["parameters"]["field"] == "chat_id"
    bot.error("deleteMessages", 404, "CHAT_NOT_FOUND", chat_id=other_chat.chat_id,
              message_ids=[theirs])


def test_a_message_of_another_chat_of_the_same_bot_is_not_found(bot, chat, start_chat):
    other = start_chat(bot)
    elsewhere = send_some(bot, other, 1)[0]
    bot.error("deleteMessage", 404, "MESSAGE_NOT_FOUND", chat_id=chat.chat_id,
              message_id=elsewhere)


@pytest.mark.parametrize("params, field", [
    ({"message_id": 0}, "message_id"), ({"message_id": "2"}, "message_id"),
    ({"message_id": None}, "message_id"), ({}, "message_id"),
    ({"message_id": 2, "message_ids": [2]}, "message_ids"),
])
def test_delete_message_parameters(bot, chat, params, field):
    body = bot.error("deleteMessage", 400, "INVALID_PARAMETER", chat_id=chat.chat_id, **params)
    assert body["parameters"]["field"] == field


def test_delete_messages_deletes_them_all(bot, chat, operator):
    ids = send_some(bot, chat, 4)
    assert bot.ok("deleteMessages", chat_id=chat.chat_id, message_ids=ids[:3]) is True
    assert visible_ids(operator, chat, bot) == [1, ids[3]]


def test_delete_messages_up_to_100_ids(bot, chat, operator):
    ids = send_some(bot, chat, 101)
    body = bot.error("deleteMessages", 400, "INVALID_PARAMETER", chat_id=chat.chat_id,
                     message_ids=ids)
    assert body["parameters"]["field"] == "message_ids"
    assert len(visible_ids(operator, chat, bot)) == 102
    assert bot.ok("deleteMessages", chat_id=chat.chat_id, message_ids=ids[:100]) is True
    assert visible_ids(operator, chat, bot) == [1, ids[100]]


def test_delete_messages_accepts_repeated_and_already_deleted_ids(bot, chat, operator):
    first, second = send_some(bot, chat, 2)
    bot.ok("deleteMessage", chat_id=chat.chat_id, message_id=first)
    assert bot.ok("deleteMessages", chat_id=chat.chat_id,
                  message_ids=[second, first, second]) is True
    assert visible_ids(operator, chat, bot) == [1]


def test_one_foreign_id_deletes_nothing(bot, chat, operator, new_bot, start_chat):
    ids = send_some(bot, chat, 3)
    other_bot = new_bot()
    other_chat = start_chat(other_bot, user_id=chat.user_id)
    foreign = send_some(other_bot, other_chat, 6)[-1]
    assert foreign not in ids
    body = bot.error("deleteMessages", 404, "MESSAGE_NOT_FOUND", chat_id=chat.chat_id,
                     message_ids=[*ids, foreign])
    assert body["parameters"]["field"] == "message_ids"
    assert body["parameters"]["message_id"] == foreign
    assert visible_ids(operator, chat, bot) == [1, *ids]


def test_a_user_message_among_the_ids_deletes_nothing(bot, chat, operator):
    ids = send_some(bot, chat, 2)
    received = operator("userSendMessage", user_id=chat.user_id, bot_id=bot.id, text="mine")
    bot.error("deleteMessages", 404, "MESSAGE_NOT_FOUND", chat_id=chat.chat_id,
              message_ids=[ids[0], received["message_id"], ids[1]])
    assert visible_ids(operator, chat, bot) == [1, *ids, received["message_id"]]


def test_an_id_of_another_chat_of_the_same_bot_deletes_nothing(bot, chat, operator,
                                                               start_chat):
    ids = send_some(bot, chat, 2)
    other = start_chat(bot)
    elsewhere = send_some(bot, other, 1)[0]
    bot.error("deleteMessages", 404, "MESSAGE_NOT_FOUND", chat_id=chat.chat_id,
              message_ids=[*ids, elsewhere])
    assert visible_ids(operator, chat, bot) == [1, *ids]
    assert elsewhere in visible_ids(operator, other, bot)


@pytest.mark.parametrize("message_ids, path", [
    ([], None), (None, None), (5, None), ("1,2", None), ({"0": 1}, None),
    ([2, "3"], "message_ids.1"), ([2, 0], "message_ids.1"), ([True], "message_ids.0"),
    ([2.5], "message_ids.0"),
])
def test_message_ids_is_an_array_of_1_to_100_positive_integers(bot, chat, message_ids, path):
    send_some(bot, chat, 2)
    body = bot.error("deleteMessages", 400, "INVALID_PARAMETER", chat_id=chat.chat_id,
                     message_ids=message_ids)
    assert body["parameters"]["field"] == "message_ids"
    assert body["parameters"].get("path") == path


def test_delete_messages_needs_message_ids_and_rejects_unknown_fields(bot, chat):
    body = bot.error("deleteMessages", 400, "INVALID_PARAMETER", chat_id=chat.chat_id)
    assert body["parameters"]["field"] == "message_ids"
    body = bot.error("deleteMessages", 400, "INVALID_PARAMETER", chat_id=chat.chat_id,
                     message_ids=[1], message_id=1)
    assert body["parameters"]["field"] == "message_id"


def test_a_delete_is_replayed_under_its_idempotency_key(bot, chat):
    [gone] = send_some(bot, chat, 1)
    params = {"chat_id": chat.chat_id, "message_ids": [gone]}
    first = bot.call("deleteMessages", params, headers={"Idempotency-Key": "del-1"})
    replay = bot.call("deleteMessages", params, headers={"Idempotency-Key": "del-1"})
    assert first.status_code == replay.status_code == 200
    assert replay.headers.get("Idempotent-Replayed") == "true"
    assert replay.get_json() == first.get_json() == {"ok": True, "result": True}
