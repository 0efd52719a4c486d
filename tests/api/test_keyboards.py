"""reply_markup (inline keyboards): shape, every limit, exactly one action,
HTTPS-only urls, the echo, and removal by an empty keyboard."""
import json

import pytest
from marshmallow import ValidationError

from botsvc.catalogue.markup import check_total_buttons
from botsvc.db import connect, transaction
from botsvc.domain.sending import send_text


def of_bytes(size: int) -> str:
    """A string of exactly ``size`` UTF-8 bytes, mostly 3-byte characters."""
    return "€" * (size // 3) + "a" * (size % 3)


def button(n: int = 0, **action) -> dict:
    return {"text": f"b{n}", **(action or {"callback_data": f"d{n}"})}


def keyboard(*rows) -> dict:
    return {"inline_keyboard": [list(row) for row in rows]}


def send(bot, chat, markup):
    return bot.call("sendMessage", {"chat_id": chat.chat_id, "text": "hi", "reply_markup": markup})


def rejected(bot, chat, markup, path: str) -> dict:
    body = bot.error("sendMessage", 400, "INVALID_PARAMETER", chat_id=chat.chat_id, text="hi",
                     reply_markup=markup)
    assert body["parameters"]["field"] == "reply_markup"
    assert body["parameters"].get("path") == path, body
    return body


def test_message_echoes_the_keyboard_and_the_user_sees_it(bot, chat, operator):
    markup = keyboard([{"text": "Open", "url": "https://example.org/a?b=c"},
                       {"text": "Pick", "callback_data": "pick:1"}],
                      [{"text": "Copy", "copy_text": "CODE-42"}])
    sent = bot.ok("sendMessage", chat_id=chat.chat_id, text="hi", reply_markup=markup)
    assert sent["reply_markup"] == markup
    view = operator("userGetChat", user_id=chat.user_id, bot_id=bot.id)
    assert view["messages"][-1]["reply_markup"] == markup


def test_ten_rows_of_eight_buttons_are_accepted(bot, chat):
    markup = keyboard(*[[button(r * 8 + c) for c in range(8)] for r in range(10)])
    sent = bot.ok("sendMessage", chat_id=chat.chat_id, text="hi", reply_markup=markup)
    assert sent["reply_markup"] == markup
    assert sum(len(row) for row in sent["reply_markup"]["inline_keyboard"]) == 80


def test_eleven_rows_are_rejected(bot, chat):
    rejected(bot, chat, keyboard(*[[button(r)] for r in range(11)]),
             "reply_markup.inline_keyboard")


def test_nine_buttons_in_a_row_are_rejected(bot, chat):
    rejected(bot, chat, keyboard([button(0)], [button(c) for c in range(9)]),
             "reply_markup.inline_keyboard.1")


def test_more_than_80_buttons_in_total_are_rejected_by_the_total_rule():
    # 10 rows of at most 8 cannot hold 81 buttons, so the total rule is checked directly.
    check_total_buttons([[button(c) for c in range(8)] for _ in range(10)])
    with pytest.raises(ValidationError):
        check_total_buttons([[button(c) for c in range(9)] for _ in range(9)])


def test_empty_inline_keyboard_means_no_buttons(bot, chat):
    sent = bot.ok("sendMessage", chat_id=chat.chat_id, text="hi",
                  reply_markup={"inline_keyboard": []})
    assert "reply_markup" not in sent


def test_empty_rows_are_dropped_and_a_keyboard_of_empty_rows_is_none(bot, chat):
    sent = bot.ok("sendMessage", chat_id=chat.chat_id, text="hi",
                  reply_markup=keyboard([button(1)], [], [button(2)]))
    assert sent["reply_markup"] == keyboard([button(1)], [button(2)])
    sent = bot.ok("sendMessage", chat_id=chat.chat_id, text="hi",
                  reply_markup=keyboard([], []))
    assert "reply_markup" not in sent


def test_empty_rows_count_towards_the_ten_row_limit(bot, chat):
    assert send(bot, chat, keyboard(*([[button(1)]] + [[]] * 9))).status_code == 200
    rejected(bot, chat, keyboard(*([[button(1)]] + [[]] * 10)), "reply_markup.inline_keyboard")


@pytest.mark.parametrize("size", [1, 127, 128])
def test_button_text_up_to_128_bytes(bot, chat, size):
    text = of_bytes(size)
    sent = bot.ok("sendMessage", chat_id=chat.chat_id, text="hi",
                  reply_markup=keyboard([{"text": text, "callback_data": "x"}]))
    assert sent["reply_markup"]["inline_keyboard"][0][0]["text"] == text


def test_button_text_of_129_bytes_is_rejected(bot, chat):
    text = "€" * 43
    assert len(text) == 43 and len(text.encode()) == 129
    rejected(bot, chat, keyboard([button(0), {"text": text, "callback_data": "x"}]),
             "reply_markup.inline_keyboard.0.1.text")


@pytest.mark.parametrize("bad", [{"callback_data": "x"}, {"text": "", "callback_data": "x"},
                                 {"text": None, "callback_data": "x"},
                                 {"text": 5, "callback_data": "x"}])
def test_button_text_is_required_non_empty_string(bot, chat, bad):
    rejected(bot, chat, keyboard([bad]), "reply_markup.inline_keyboard.0.0.text")


def test_button_with_no_action_is_rejected(bot, chat):
    rejected(bot, chat, keyboard([button(0)], [{"text": "nothing"}]),
             "reply_markup.inline_keyboard.1.0")


@pytest.mark.parametrize("actions", [
    {"url": "https://example.org", "callback_data": "x"},
    {"callback_data": "x", "copy_text": "y"},
    {"url": "https://example.org", "copy_text": "y"},
    {"url": "https://example.org", "callback_data": "x", "copy_text": "y"},
])
def test_button_with_two_or_more_actions_is_rejected(bot, chat, actions):
    rejected(bot, chat, keyboard([{"text": "two", **actions}]),
             "reply_markup.inline_keyboard.0.0")


def test_url_of_2048_bytes_is_accepted_and_2049_rejected(bot, chat):
    base = "https://example.org/"
    ok_url = base + "a" * (2048 - len(base))
    sent = bot.ok("sendMessage", chat_id=chat.chat_id, text="hi",
                  reply_markup=keyboard([{"text": "u", "url": ok_url}]))
    assert sent["reply_markup"]["inline_keyboard"][0][0]["url"] == ok_url
    rejected(bot, chat, keyboard([{"text": "u", "url": ok_url + "a"}]),
             "reply_markup.inline_keyboard.0.0.url")


def test_url_bytes_count_utf8_not_characters(bot, chat):
    base = "https://example.org/"
    url = base + "é" * ((2049 - len(base)) // 2) + "a" * ((2049 - len(base)) % 2)
    assert len(url.encode()) == 2049 and len(url) < 2048
    rejected(bot, chat, keyboard([{"text": "u", "url": url}]),
             "reply_markup.inline_keyboard.0.0.url")


@pytest.mark.parametrize("url", [
    "http://example.org", "ftp://example.org", "javascript:alert(1)", "example.org",
    "https://", "https:///path", "https://exa mple.org", "https://example.org/\tx",
    "https://example.org:99999/", "", "//example.org",
])
def test_url_must_be_https_with_a_host(bot, chat, url):
    rejected(bot, chat, keyboard([{"text": "u", "url": url}]),
             "reply_markup.inline_keyboard.0.0.url")


@pytest.mark.parametrize("url", ["https://example.org", "HTTPS://Example.org/x#frag",
                                 "https://example.org:8443/p?q=1"])
def test_https_urls_are_accepted(bot, chat, url):
    assert send(bot, chat, keyboard([{"text": "u", "url": url}])).status_code == 200


@pytest.mark.parametrize("action", ["callback_data", "copy_text"])
def test_callback_data_and_copy_text_up_to_256_bytes(bot, chat, action):
    value = of_bytes(256)
    sent = bot.ok("sendMessage", chat_id=chat.chat_id, text="hi",
                  reply_markup=keyboard([{"text": "b", action: value}]))
    assert sent["reply_markup"]["inline_keyboard"][0][0][action] == value
    rejected(bot, chat, keyboard([{"text": "b", action: of_bytes(257)}]),
             f"reply_markup.inline_keyboard.0.0.{action}")


@pytest.mark.parametrize("action", ["callback_data", "copy_text"])
@pytest.mark.parametrize("value", ["", None, 7, ["x"]])
def test_callback_data_and_copy_text_are_non_empty_strings(bot, chat, action, value):
    rejected(bot, chat, keyboard([{"text": "b", action: value}]),
             f"reply_markup.inline_keyboard.0.0.{action}")


def test_unknown_button_key_is_rejected(bot, chat):
    rejected(bot, chat, keyboard([{"text": "b", "callback_data": "x", "pay": True}]),
             "reply_markup.inline_keyboard.0.0.pay")


def test_unknown_reply_markup_key_is_rejected(bot, chat):
    rejected(bot, chat, {"inline_keyboard": [], "keyboard": []}, "reply_markup.keyboard")


def test_inline_keyboard_is_required(bot, chat):
    rejected(bot, chat, {}, "reply_markup.inline_keyboard")


@pytest.mark.parametrize("markup", ["[]", [], None, 5])
def test_reply_markup_must_be_an_object(bot, chat, markup):
    body = bot.error("sendMessage", 400, "INVALID_PARAMETER", chat_id=chat.chat_id, text="hi",
                     reply_markup=markup)
    assert body["parameters"]["field"] == "reply_markup"


@pytest.mark.parametrize("markup, path", [
    ({"inline_keyboard": {}}, "reply_markup.inline_keyboard"),
    ({"inline_keyboard": [{"text": "b", "callback_data": "x"}]}, "reply_markup.inline_keyboard.0"),
    ({"inline_keyboard": [["b"]]}, "reply_markup.inline_keyboard.0.0"),
])
def test_rows_are_arrays_of_button_objects(bot, chat, markup, path):
    rejected(bot, chat, markup, path)


def test_keyboard_travels_in_a_multipart_request(bot, chat):
    markup = keyboard([button(1)])
    response = bot.call("sendMessage", data={"chat_id": chat.chat_id, "text": "hi",
                                             "reply_markup": json.dumps(markup)},
                        content_type="multipart/form-data")
    assert response.status_code == 200, response.get_json()
    assert response.get_json()["result"]["reply_markup"] == markup


def test_domain_send_path_stores_keyboards_like_the_api(app, bot, chat):
    # The broadcast worker calls the domain functions with stored payloads.
    conn = connect(app.config["SETTINGS"].db_path)
    try:
        with transaction(conn):
            with_rows = send_text(conn, bot.id, chat.chat_id, "hi",
                                  reply_markup=keyboard([], [button(1)]))
            without = send_text(conn, bot.id, chat.chat_id, "hi",
                                reply_markup={"inline_keyboard": []})
    finally:
        conn.close()
    assert with_rows["reply_markup"] == keyboard([button(1)])
    assert "reply_markup" not in without
