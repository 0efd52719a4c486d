"""editMessageText, editMessageCard, editMessageReplyMarkup: own messages
only, matching type, active membership, edit_date, the user's view, replays."""
import pytest

from botsvc.db import connect, transaction
from botsvc.domain import messages
from botsvc.domain.chats import require_chat

CARD = {"type": "product", "title": "Lamp", "fields": [{"label": "Price", "value": "10"}]}
NEW_CARD = {"type": "status", "title": "Shipped", "subtitle": "today"}
MARKUP = {"inline_keyboard": [[{"text": "Go", "callback_data": "go"}]]}
OTHER_MARKUP = {"inline_keyboard": [[{"text": "Docs", "url": "https://example.org/docs"}]]}
EDITS = {
    "editMessageText": {"text": "edited"},
    "editMessageCard": {"card": NEW_CARD},
    "editMessageReplyMarkup": {"reply_markup": OTHER_MARKUP},
}


def of_bytes(size: int) -> str:
    return "€" * (size // 3) + "a" * (size % 3)


@pytest.fixture
def text_message(bot, chat):
    return bot.ok("sendMessage", chat_id=chat.chat_id, text="original", reply_markup=MARKUP)


@pytest.fixture
def card_message(bot, chat):
    return bot.ok("sendCard", chat_id=chat.chat_id, card=CARD, reply_markup=MARKUP)


def target_for(method, text_message, card_message):
    return card_message if method == "editMessageCard" else text_message


def last_seen(operator, chat, bot, message_id):
    view = operator("userGetChat", user_id=chat.user_id, bot_id=bot.id)
    [message] = [m for m in view["messages"] if m["message_id"] == message_id]
    return message


def test_edit_text_returns_the_edited_message(bot, chat, operator, text_message):
    edited = bot.ok("editMessageText", chat_id=chat.chat_id,
                    message_id=text_message["message_id"], text="new text", parse_mode="plain")
    assert edited["message_id"] == text_message["message_id"] and edited["type"] == "text"
    assert edited["text"] == "new text" and edited["date"] == text_message["date"]
    assert isinstance(edited["edit_date"], int) and edited["edit_date"] >= edited["date"]
    assert edited["reply_markup"] == MARKUP  # omitted reply_markup keeps the buttons
    assert last_seen(operator, chat, bot, edited["message_id"]) == edited


def test_edit_text_replaces_or_removes_the_buttons(bot, chat, text_message):
    ref = {"chat_id": chat.chat_id, "message_id": text_message["message_id"]}
    edited = bot.ok("editMessageText", **ref, text="a", reply_markup=OTHER_MARKUP)
    assert edited["reply_markup"] == OTHER_MARKUP
    edited = bot.ok("editMessageText", **ref, text="b", reply_markup={"inline_keyboard": []})
    assert "reply_markup" not in edited


def test_edit_text_limits_in_bytes(bot, chat, text_message):
    ref = {"chat_id": chat.chat_id, "message_id": text_message["message_id"]}
    assert bot.ok("editMessageText", **ref, text=of_bytes(16384))["text"] == of_bytes(16384)
    for text in (of_bytes(16385), "", None, 5):
        body = bot.error("editMessageText", 400, "INVALID_PARAMETER", **ref, text=text)
        assert body["parameters"]["field"] == "text"
    body = bot.error("editMessageText", 400, "INVALID_PARAMETER", **ref)
    assert body["parameters"]["field"] == "text"


def test_edit_card_replaces_the_whole_card(bot, chat, operator, card_message):
    edited = bot.ok("editMessageCard", chat_id=chat.chat_id,
                    message_id=card_message["message_id"], card=NEW_CARD)
    assert edited["type"] == "card" and edited["card"] == NEW_CARD  # old fields are gone
    assert edited["reply_markup"] == MARKUP and "edit_date" in edited
    assert last_seen(operator, chat, bot, edited["message_id"]) == edited


def test_edit_card_with_new_buttons(bot, chat, card_message):
    edited = bot.ok("editMessageCard", chat_id=chat.chat_id,
                    message_id=card_message["message_id"], card=NEW_CARD,
                    reply_markup={"inline_keyboard": [[]]}, parse_mode="plain")
    assert "reply_markup" not in edited


@pytest.mark.parametrize("card, path", [
    ({"type": "status"}, "card.title"),
    ({"type": "status", "title": ""}, "card.title"),
    ({"type": "status", "title": of_bytes(257)}, "card.title"),
    ({"type": "other", "title": "T"}, "card.type"),
    ({"type": "info", "title": "T", "fields": [{"label": "l", "value": "v"}] * 13},
     "card.fields"),
])
def test_edit_card_validates_the_card(bot, chat, card_message, card, path):
    body = bot.error("editMessageCard", 400, "INVALID_PARAMETER", chat_id=chat.chat_id,
                     message_id=card_message["message_id"], card=card)
    assert body["parameters"] == {"field": "card", "path": path}


def test_edit_card_needs_the_card(bot, chat, card_message):
    body = bot.error("editMessageCard", 400, "INVALID_PARAMETER", chat_id=chat.chat_id,
                     message_id=card_message["message_id"])
    assert body["parameters"]["field"] == "card"


def test_edit_reply_markup_sets_replaces_and_removes(bot, chat, operator, card_message):
    plain = bot.ok("sendMessage", chat_id=chat.chat_id, text="no buttons yet")
    ref = {"chat_id": chat.chat_id, "message_id": plain["message_id"]}
    edited = bot.ok("editMessageReplyMarkup", **ref, reply_markup=MARKUP)
    assert edited["reply_markup"] == MARKUP and edited["text"] == "no buttons yet"
    assert "edit_date" in edited
    removed = bot.ok("editMessageReplyMarkup", **ref, reply_markup={"inline_keyboard": []})
    assert "reply_markup" not in removed
    assert "reply_markup" not in last_seen(operator, chat, bot, plain["message_id"])
    on_card = bot.ok("editMessageReplyMarkup", chat_id=chat.chat_id,
                     message_id=card_message["message_id"], reply_markup=OTHER_MARKUP)
    assert on_card["card"] == CARD and on_card["reply_markup"] == OTHER_MARKUP


@pytest.mark.parametrize("params, path", [
    ({}, None),
    ({"reply_markup": None}, None),
    ({"reply_markup": {"inline_keyboard": [[{"text": "x"}]]}}, "reply_markup.inline_keyboard.0.0"),
    ({"reply_markup": {"inline_keyboard": [[{"text": "x", "callback_data": "y"}]] * 11}},
     "reply_markup.inline_keyboard"),
])
def test_edit_reply_markup_requires_a_valid_keyboard(bot, chat, text_message, params, path):
    body = bot.error("editMessageReplyMarkup", 400, "INVALID_PARAMETER", chat_id=chat.chat_id,
                     message_id=text_message["message_id"], **params)
    assert body["parameters"]["field"] == "reply_markup"
    assert body["parameters"].get("path") == path


@pytest.mark.parametrize("method, wrong", [("editMessageText", "card"),
                                           ("editMessageCard", "text")])
def test_type_must_match(bot, chat, text_message, card_message, method, wrong):
    target = card_message if wrong == "card" else text_message
    body = bot.error(method, 400, "INVALID_PARAMETER", chat_id=chat.chat_id,
                     message_id=target["message_id"], **EDITS[method])
    assert body["parameters"]["field"] == "message_id"


@pytest.mark.parametrize("method", sorted(EDITS))
def test_user_messages_cannot_be_edited(bot, chat, operator, method):
    received = operator("userSendMessage", user_id=chat.user_id, bot_id=bot.id, text="mine")
    body = bot.error(method, 404, "MESSAGE_NOT_FOUND", chat_id=chat.chat_id,
                     message_id=received["message_id"], **EDITS[method])
    assert body["parameters"]["field"] == "message_id"
    assert last_seen(operator, chat, bot, received["message_id"])["text"] == "mine"


@pytest.mark.parametrize("method", sorted(EDITS))
def test_another_bots_message_id_is_not_found(bot, chat, new_bot, start_chat, method):
    other_bot = new_bot()
    other_chat = start_chat(other_bot, user_id=chat.user_id)
    for _ in range(6):
        theirs = other_bot.ok("sendCard" if method == "editMessageCard" else "sendMessage",
                              chat_id=other_chat.chat_id,
                              **({"card": CARD} if method == "editMessageCard" else {"text": "t"}))
    bot.error(method, 404, "MESSAGE_NOT_FOUND", chat_id=chat.chat_id,
              message_id=theirs["message_id"], **EDITS[method])


@pytest.mark.parametrize("method", sorted(EDITS))
def test_another_bots_chat_is_not_found(bot, chat, new_bot, start_chat, text_message,
                                        card_message, method):
    other_bot = new_bot()
    other_chat = start_chat(other_bot, user_id=chat.user_id)
    target = target_for(method, text_message, card_message)
    body = bot.error(method, 404, "CHAT_NOT_FOUND", chat_id=other_chat.chat_id,
                     message_id=target["message_id"], **EDITS[method])
    assert body["parameters"]["field"] == "chat_id"


@pytest.mark.parametrize("method", sorted(EDITS))
def test_a_message_of_another_chat_of_the_same_bot_is_not_found(bot, chat, start_chat,
                                                                 text_message, card_message,
                                                                 method):
    other = start_chat(bot)
    target = target_for(method, text_message, card_message)
    bot.error(method, 404, "MESSAGE_NOT_FOUND", chat_id=other.chat_id,
              message_id=target["message_id"], **EDITS[method])


@pytest.mark.parametrize("method", sorted(EDITS))
def test_deleted_and_unknown_messages_are_not_found(bot, chat, text_message, card_message,
                                                     method):
    target = target_for(method, text_message, card_message)
    bot.ok("deleteMessage", chat_id=chat.chat_id, message_id=target["message_id"])
    bot.error(method, 404, "MESSAGE_NOT_FOUND", chat_id=chat.chat_id,
              message_id=target["message_id"], **EDITS[method])
    bot.error(method, 404, "MESSAGE_NOT_FOUND", chat_id=chat.chat_id, message_id=10_000,
              **EDITS[method])


@pytest.mark.parametrize("method", sorted(EDITS))
def test_edits_after_stop_are_refused(bot, chat, operator, text_message, card_message, method):
    target = target_for(method, text_message, card_message)
    operator("userStop", user_id=chat.user_id, bot_id=bot.id)
    bot.error(method, 403, "BOT_NOT_STARTED", chat_id=chat.chat_id,
              message_id=target["message_id"], **EDITS[method])
    assert "edit_date" not in last_seen(operator, chat, bot, target["message_id"])


@pytest.mark.parametrize("method", sorted(EDITS))
def test_edits_after_block_are_refused(bot, chat, operator, text_message, card_message, method):
    target = target_for(method, text_message, card_message)
    operator("userBlock", user_id=chat.user_id, bot_id=bot.id)
    bot.error(method, 403, "BOT_BLOCKED", chat_id=chat.chat_id,
              message_id=target["message_id"], **EDITS[method])


def test_edits_work_again_after_a_new_start(bot, chat, operator, start_chat, text_message):
    operator("userStop", user_id=chat.user_id, bot_id=bot.id)
    start_chat(bot, user_id=chat.user_id)
    assert bot.ok("editMessageText", chat_id=chat.chat_id,
                  message_id=text_message["message_id"], text="back")["text"] == "back"


@pytest.mark.parametrize("method", sorted(EDITS))
@pytest.mark.parametrize("message_id", [0, -3, "1", True, None])
def test_message_id_is_a_positive_integer(bot, chat, method, message_id):
    body = bot.error(method, 400, "INVALID_PARAMETER", chat_id=chat.chat_id,
                     message_id=message_id, **EDITS[method])
    assert body["parameters"]["field"] == "message_id"


@pytest.mark.parametrize("method", sorted(EDITS))
def test_unknown_parameters_are_rejected(bot, chat, text_message, method):
    body = bot.error(method, 400, "INVALID_PARAMETER", chat_id=chat.chat_id,
                     message_id=text_message["message_id"], reply_to_message_id=1,
                     **EDITS[method])
    assert body["parameters"]["field"] == "reply_to_message_id"


def test_an_edit_is_replayed_under_its_idempotency_key(bot, chat, text_message):
    params = {"chat_id": chat.chat_id, "message_id": text_message["message_id"], "text": "once"}
    headers = {"Idempotency-Key": "edit-1"}
    first = bot.call("editMessageText", params, headers=headers)
    bot.ok("editMessageText", chat_id=chat.chat_id, message_id=text_message["message_id"],
           text="later")
    replay = bot.call("editMessageText", params, headers=headers)
    assert replay.status_code == 200 and replay.headers.get("Idempotent-Replayed") == "true"
    assert replay.get_json() == first.get_json()
    assert replay.get_json()["result"]["text"] == "once"
    conflict = bot.call("editMessageText", {**params, "text": "changed"}, headers=headers)
    assert (conflict.status_code, conflict.get_json()["error_code"]) == (
        409, "IDEMPOTENCY_CONFLICT")


def test_a_refused_edit_is_replayed_too(bot, chat, operator, text_message):
    params = {"chat_id": chat.chat_id, "message_id": text_message["message_id"], "text": "x"}
    operator("userStop", user_id=chat.user_id, bot_id=bot.id)
    first = bot.call("editMessageText", params, headers={"Idempotency-Key": "edit-2"})
    assert first.status_code == 403
    operator("userStart", user_id=chat.user_id, bot_id=bot.id)
    replay = bot.call("editMessageText", params, headers={"Idempotency-Key": "edit-2"})
    assert replay.status_code == 403 and replay.get_json() == first.get_json()


def test_media_group_members_get_no_buttons(app, bot, chat):
    # Media groups come from the media methods; the rule that they carry no
    # buttons is enforced here for every edit that takes reply_markup.
    conn = connect(app.config["SETTINGS"].db_path)
    try:
        with transaction(conn):
            member = messages.send_message(
                conn, bot.id, require_chat(conn, bot.id, chat.chat_id), type="photo",
                content={"caption": "one"}, media_group_id="g1")
    finally:
        conn.close()
    ref = {"chat_id": chat.chat_id, "message_id": member["message_id"]}
    body = bot.error("editMessageReplyMarkup", 400, "INVALID_PARAMETER", **ref,
                     reply_markup=MARKUP)
    assert body["parameters"]["field"] == "reply_markup"
    assert "reply_markup" not in bot.ok("editMessageReplyMarkup", **ref,
                                        reply_markup={"inline_keyboard": []})
    bot.error("editMessageText", 400, "INVALID_PARAMETER", **ref, text="no")
