"""sendCard: the Card object, every byte limit, buttons, replies and membership."""
import pytest


def of_bytes(size: int) -> str:
    """A string of exactly ``size`` UTF-8 bytes, mostly 3-byte characters."""
    return "€" * (size // 3) + "a" * (size % 3)


FULL_CARD = {"type": "receipt", "title": "Order #17", "subtitle": "Paid by card",
             "text": "Thank you.", "fields": [{"label": "Total", "value": "12.50 EUR"},
                                              {"label": "Items", "value": "3"}]}


def card_rejected(bot, chat, card, path: str) -> dict:
    body = bot.error("sendCard", 400, "INVALID_PARAMETER", chat_id=chat.chat_id, card=card)
    assert body["parameters"]["field"] == "card"
    assert body["parameters"].get("path") == path, body
    return body


def test_send_card_returns_a_card_message_with_the_card_echoed(bot, chat, operator):
    sent = bot.ok("sendCard", chat_id=chat.chat_id, card=FULL_CARD)
    assert sent["type"] == "card" and sent["card"] == FULL_CARD
    assert sent["from_bot"] is True and sent["chat"] == {"id": chat.chat_id, "type": "private"}
    assert isinstance(sent["message_id"], int) and isinstance(sent["date"], int)
    assert "text" not in sent and "reply_markup" not in sent and "edit_date" not in sent
    view = operator("userGetChat", user_id=chat.user_id, bot_id=bot.id)
    assert view["messages"][-1] == sent


@pytest.mark.parametrize("card_type", ["info", "product", "status", "receipt"])
def test_every_card_type_with_only_a_title(bot, chat, card_type):
    card = {"type": card_type, "title": "T"}
    assert bot.ok("sendCard", chat_id=chat.chat_id, card=card)["card"] == card


@pytest.mark.parametrize("card_type", ["invoice", "INFO", "", None, 1])
def test_unknown_card_type_is_rejected(bot, chat, card_type):
    card_rejected(bot, chat, {"type": card_type, "title": "T"}, "card.type")


def test_card_type_and_title_are_required(bot, chat):
    card_rejected(bot, chat, {"title": "T"}, "card.type")
    card_rejected(bot, chat, {"type": "info"}, "card.title")


def test_card_is_required_and_an_object(bot, chat):
    body = bot.error("sendCard", 400, "INVALID_PARAMETER", chat_id=chat.chat_id)
    assert body["parameters"]["field"] == "card"
    for value in ("card", ["info"], None):
        body = bot.error("sendCard", 400, "INVALID_PARAMETER", chat_id=chat.chat_id, card=value)
        assert body["parameters"]["field"] == "card"


@pytest.mark.parametrize("key, limit, empty_ok", [
    ("title", 256, False), ("text", 8192, True), ("subtitle", 512, True)])
def test_card_string_limits_in_bytes(bot, chat, key, limit, empty_ok):
    card = {"type": "info", "title": "T", key: of_bytes(limit)}
    assert bot.ok("sendCard", chat_id=chat.chat_id, card=card)["card"][key] == card[key]
    card_rejected(bot, chat, {**card, key: of_bytes(limit + 1)}, f"card.{key}")
    empty = {**card, key: ""}
    if empty_ok:
        assert bot.ok("sendCard", chat_id=chat.chat_id, card=empty)["card"][key] == ""
    else:
        card_rejected(bot, chat, empty, f"card.{key}")


def test_title_of_86_three_byte_characters_is_258_bytes_and_rejected(bot, chat):
    card_rejected(bot, chat, {"type": "info", "title": "€" * 86}, "card.title")
    card = {"type": "info", "title": "€" * 85}  # 255 bytes
    assert bot.ok("sendCard", chat_id=chat.chat_id, card=card)["card"] == card


def test_twelve_fields_are_accepted_and_thirteen_rejected(bot, chat):
    fields = [{"label": f"L{i}", "value": f"V{i}"} for i in range(13)]
    card = {"type": "product", "title": "T", "fields": fields[:12]}
    assert bot.ok("sendCard", chat_id=chat.chat_id, card=card)["card"]["fields"] == fields[:12]
    card_rejected(bot, chat, {**card, "fields": fields}, "card.fields")


def test_empty_fields_array_is_accepted(bot, chat):
    card = {"type": "status", "title": "T", "fields": []}
    assert bot.ok("sendCard", chat_id=chat.chat_id, card=card)["card"] == card


@pytest.mark.parametrize("key, limit", [("label", 128), ("value", 1024)])
def test_field_label_and_value_limits_in_bytes(bot, chat, key, limit):
    item = {"label": "L", "value": "V", key: of_bytes(limit)}
    card = {"type": "info", "title": "T", "fields": [{"label": "a", "value": "b"}, item]}
    assert bot.ok("sendCard", chat_id=chat.chat_id, card=card)["card"]["fields"][1] == item
    too_long = {**item, key: of_bytes(limit + 1)}
    card_rejected(bot, chat, {**card, "fields": [card["fields"][0], too_long]},
                  f"card.fields.1.{key}")


def test_label_of_43_three_byte_characters_is_rejected(bot, chat):
    card_rejected(bot, chat, {"type": "info", "title": "T",
                              "fields": [{"label": "€" * 43, "value": "v"}]},
                  "card.fields.0.label")


@pytest.mark.parametrize("item, path", [
    ({"label": "", "value": "v"}, "card.fields.0.label"),
    ({"label": "l", "value": ""}, "card.fields.0.value"),
    ({"value": "v"}, "card.fields.0.label"),
    ({"label": "l"}, "card.fields.0.value"),
    ({"label": "l", "value": 5}, "card.fields.0.value"),
    ({"label": "l", "value": "v", "unit": "kg"}, "card.fields.0.unit"),
    ("label", "card.fields.0"),
])
def test_field_items_are_label_value_objects(bot, chat, item, path):
    card_rejected(bot, chat, {"type": "info", "title": "T", "fields": [item]}, path)


def test_fields_must_be_an_array(bot, chat):
    card_rejected(bot, chat, {"type": "info", "title": "T", "fields": {"label": "l"}},
                  "card.fields")


def test_unknown_card_key_is_rejected(bot, chat):
    card_rejected(bot, chat, {"type": "info", "title": "T", "image": "x"}, "card.image")


def test_card_with_keyboard_reply_and_plain_parse_mode(bot, chat):
    markup = {"inline_keyboard": [[{"text": "Buy", "callback_data": "buy:1"}]]}
    sent = bot.ok("sendCard", chat_id=chat.chat_id, card=FULL_CARD, reply_markup=markup,
                  reply_to_message_id=1, parse_mode="plain")
    assert sent["reply_markup"] == markup and sent["reply_to_message_id"] == 1


def test_card_keyboard_is_validated(bot, chat):
    body = bot.error("sendCard", 400, "INVALID_PARAMETER", chat_id=chat.chat_id, card=FULL_CARD,
                     reply_markup={"inline_keyboard": [[{"text": "x", "url": "http://a.org"}]]})
    assert body["parameters"] == {"field": "reply_markup",
                                  "path": "reply_markup.inline_keyboard.0.0.url"}


@pytest.mark.parametrize("mode", ["HTML", "Markdown", "", None])
def test_parse_mode_is_plain_only(bot, chat, mode):
    body = bot.error("sendCard", 400, "INVALID_PARAMETER", chat_id=chat.chat_id, card=FULL_CARD,
                     parse_mode=mode)
    assert body["parameters"]["field"] == "parse_mode"


def test_unknown_parameter_is_rejected(bot, chat):
    body = bot.error("sendCard", 400, "INVALID_PARAMETER", chat_id=chat.chat_id, card=FULL_CARD,
                     text="hi")
    assert body["parameters"]["field"] == "text"


def test_card_to_another_bots_chat_is_chat_not_found(bot, new_bot, start_chat):
    other_chat = start_chat(new_bot())
    body = bot.error("sendCard", 404, "CHAT_NOT_FOUND", chat_id=other_chat.chat_id,
                     card=FULL_CARD)
    assert body["parameters"]["field"] == "chat_id"


def test_card_needs_active_membership(bot, chat, operator, start_chat):
    operator("userStop", user_id=chat.user_id, bot_id=bot.id)
    bot.error("sendCard", 403, "BOT_NOT_STARTED", chat_id=chat.chat_id, card=FULL_CARD)
    blocked = start_chat(bot)
    operator("userBlock", user_id=blocked.user_id, bot_id=bot.id)
    bot.error("sendCard", 403, "BOT_BLOCKED", chat_id=blocked.chat_id, card=FULL_CARD)
