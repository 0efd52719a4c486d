"""The /v2 envelope: dispatch, HTTP methods, JSON bodies, size limit, strict
parameters and exact types."""
from __future__ import annotations

import io
import json

import pytest

from tests.support.contract import FAILURE_KEYS, assert_failure, assert_invalid

MIB = 1024 * 1024


def test_success_envelope_is_ok_and_result(bot):
    response = bot.call("getMe")
    assert response.status_code == 200
    assert response.mimetype == "application/json"
    assert set(response.get_json()) == {"ok", "result"}
    assert response.get_json()["ok"] is True


@pytest.mark.parametrize("name", ["getme", "GetMe", "GETME", "sendmessage", "noSuchMethod",
                                  "getMe2"])
def test_unknown_or_miscased_method_is_method_not_found(bot, name):
    assert_failure(bot.call(name), 404, "METHOD_NOT_FOUND")


def test_paths_beside_methods_are_not_found(bot, client):
    assert_failure(bot.client.post("/v2/getMe/", json={},
                                   headers={"Authorization": f"Bearer {bot.token}"}),
                   404, "METHOD_NOT_FOUND")
    assert_failure(client.post("/v2/", json={}), 404, "METHOD_NOT_FOUND")


@pytest.mark.parametrize("http_method", ["GET", "PUT", "DELETE", "PATCH", "OPTIONS"])
def test_other_http_methods_are_not_allowed(bot, http_method):
    response = bot.client.open("/v2/getMe", method=http_method,
                               headers={"Authorization": f"Bearer {bot.token}"})
    assert_failure(response, 405, "METHOD_NOT_ALLOWED")


def test_head_is_not_allowed(bot):
    response = bot.client.open("/v2/sendMessage", method="HEAD",
                               headers={"Authorization": f"Bearer {bot.token}"})
    assert response.status_code == 405


def test_method_not_allowed_needs_no_token(client):
    assert_failure(client.get("/v2/getMe"), 405, "METHOD_NOT_ALLOWED")


@pytest.mark.parametrize("body", [
    b"{", b"{'a': 1}", b'{"a": 1,}', b"nonsense", b'{"a": 1} {"b": 2}',
    b'{"text": "\xff\xfe"}', b'{"text": "caf\xe9"}',       # not UTF-8
    b"[]", b"[1, 2]", b'"a string"', b"42", b"null", b"true",  # JSON but not an object
    b'{"offset": NaN}', b'{"offset": Infinity}', b'{"offset": -Infinity}',
    b'{"offset": 1, "offset": 2}', b'{"limit": 1, "limit": 1}',  # duplicate keys
    b'{"offset": "\\ud800"}', b'{"offset": "\\udc00"}', b'{"\\udfff": 1}',  # lone surrogates
    b'{"a": "\\ud800\\u0041"}',
])
def test_malformed_bodies_are_invalid_json(bot, body):
    assert_failure(bot.raw("getUpdates", body), 400, "INVALID_JSON")


def test_surrogate_pairs_are_fine(bot, chat):
    sent = bot.raw("sendMessage", json.dumps({"chat_id": chat.chat_id, "text": "\U0001F600"},
                                              ensure_ascii=True).encode())
    assert sent.status_code == 200
    assert sent.get_json()["result"]["text"] == "\U0001F600"


@pytest.mark.parametrize("body", [b"", b"{}", b" { } "])
def test_empty_body_is_an_empty_object(bot, body):
    response = bot.raw("getMe", body)
    assert response.status_code == 200, response.get_json()
    assert response.get_json()["result"]["id"] == bot.id


@pytest.mark.parametrize("body", [b"   ", b"\n"])
def test_whitespace_alone_is_not_json(bot, body):
    assert_failure(bot.raw("getMe", body), 400, "INVALID_JSON")


def test_json_body_without_content_type_is_read_as_json(bot):
    response = bot.client.post("/v2/getUpdates", data=b'{"limit": 0}',
                               headers={"Authorization": f"Bearer {bot.token}"})
    assert_invalid(response, "limit")


def _padded_body(size: int, chat_id: str) -> bytes:
    head = json.dumps({"chat_id": chat_id, "text": ""})[:-2].encode()  # ...,"text": "
    body = head + b"a" * (size - len(head) - 2) + b'"}'
    assert len(body) == size
    json.loads(body)
    return body


def test_body_of_exactly_one_mib_is_read(bot, chat):
    # A valid object of exactly 1,048,576 bytes reaches validation (text too long).
    assert_invalid(bot.raw("sendMessage", _padded_body(MIB, chat.chat_id)), "text")


def test_body_one_byte_over_one_mib_is_too_large(bot, chat):
    assert_failure(bot.raw("sendMessage", _padded_body(MIB + 1, chat.chat_id)), 413,
                   "REQUEST_TOO_LARGE")


def test_whitespace_padding_counts_too(bot):
    assert bot.raw("getMe", b"{" + b" " * (MIB - 2) + b"}").status_code == 200
    assert_failure(bot.raw("getMe", b"{" + b" " * (MIB - 1) + b"}"), 413, "REQUEST_TOO_LARGE")


def test_too_large_is_decided_before_parsing(bot):
    # Far above the limit and not even JSON: the size decides, not the syntax.
    assert_failure(bot.raw("getMe", b"\xff" * (2 * MIB)), 413, "REQUEST_TOO_LARGE")


def test_too_large_without_content_length_is_still_refused(bot):
    # A chunked body (no Content-Length, the server terminates the stream) is
    # cut at the limit while it is read.
    response = bot.client.post(
        "/v2/getMe", input_stream=io.BytesIO(b"{" + b" " * MIB + b"}"),
        headers={"Authorization": f"Bearer {bot.token}"}, content_type="application/json",
        environ_overrides={"wsgi.input_terminated": True, "CONTENT_LENGTH": ""})
    assert_failure(response, 413, "REQUEST_TOO_LARGE")


@pytest.mark.parametrize("method, params, field", [
    ("getMe", {"extra": 1}, "extra"),
    ("getUpdates", {"offset": 0, "Offset": 1}, "Offset"),
    ("getChat", {"chat_id": "vc_x", "chatid": "vc_x"}, "chatid"),
    ("sendMessage", {"chat_id": "vc_x", "text": "hi", "disable_notification": True},
     "disable_notification"),
])
def test_unknown_parameters_are_rejected_by_name(bot, method, params, field):
    assert_invalid(bot.call(method, params), field)


@pytest.mark.parametrize("params, field", [
    ({"offset": True}, "offset"),
    ({"offset": False}, "offset"),
    ({"offset": "5"}, "offset"),
    ({"offset": 1.5}, "offset"),
    ({"offset": [1]}, "offset"),
    ({"offset": {"n": 1}}, "offset"),
    ({"offset": None}, "offset"),
    ({"limit": True}, "limit"),
    ({"limit": "10"}, "limit"),
    ({"limit": None}, "limit"),
])
def test_integers_are_exact(bot, params, field):
    assert_invalid(bot.call("getUpdates", params), field)


@pytest.mark.parametrize("params, field", [
    ({"chat_id": 5, "text": "hi"}, "chat_id"),
    ({"chat_id": None, "text": "hi"}, "chat_id"),
    ({"chat_id": ["vc_x"], "text": "hi"}, "chat_id"),
    ({"chat_id": "CHAT", "text": 5}, "text"),
    ({"chat_id": "CHAT", "text": True}, "text"),
    ({"chat_id": "CHAT", "text": None}, "text"),
    ({"chat_id": "CHAT", "text": {"t": "hi"}}, "text"),
    ({"chat_id": "CHAT", "text": "hi", "parse_mode": None}, "parse_mode"),
    ({"chat_id": "CHAT", "text": "hi", "reply_to_message_id": True}, "reply_to_message_id"),
    ({"chat_id": "CHAT", "text": "hi", "reply_to_message_id": "1"}, "reply_to_message_id"),
    ({"chat_id": "CHAT", "text": "hi", "reply_to_message_id": None}, "reply_to_message_id"),
    ({"text": "hi"}, "chat_id"),
    ({"chat_id": "CHAT"}, "text"),
])
def test_strings_and_required_fields_are_exact(bot, chat, params, field):
    if params.get("chat_id") == "CHAT":
        params = {**params, "chat_id": chat.chat_id}
    assert_invalid(bot.call("sendMessage", params), field)


@pytest.mark.parametrize("value", [10 ** 19, 2 ** 63, -(2 ** 63) - 1, 10 ** 100])
def test_huge_integers_are_invalid_not_a_crash(bot, chat, value):
    assert_invalid(bot.call("getUpdates", {"offset": value}), "offset")
    assert_invalid(bot.call("sendMessage", {"chat_id": chat.chat_id, "text": "x",
                                            "reply_to_message_id": value}),
                   "reply_to_message_id")


@pytest.mark.parametrize("body", [
    b"[" * 100_000 + b"]" * 100_000,
    b'{"a": ' + b'{"a": ' * 50_000 + b"1" + b"}" * 50_001,
    b'{"offset": ' + b"9" * 5000 + b"}",
    b'{"offset": 1e999999}',
    b'{"text": "' + b"\\u0000" * 1000 + b'"}',
    b"\x00\x00\x00",
])
def test_hostile_bodies_never_cause_a_server_error(bot, body):
    for name in ("getMe", "getUpdates", "sendMessage"):
        response = bot.raw(name, body, headers={"Idempotency-Key": f"hostile-{name}"})
        assert 400 <= response.status_code < 500, response.get_data()[:300]
        assert set(response.get_json()) == FAILURE_KEYS


def test_nested_values_below_the_parser_limit_are_rejected_by_name(bot):
    body = b'{"deep": ' + b"[" * 500 + b"]" * 500 + b"}"
    assert_invalid(bot.raw("getMe", body, headers={"Idempotency-Key": "nested"}), "deep")


def test_failure_bodies_contain_no_trace_or_path(bot, app):
    data_dir = app.config["SETTINGS"].data_dir
    for response in (bot.raw("getMe", b"{"), bot.call("nope"), bot.call("getChat", {"x": 1})):
        text = response.get_data(as_text=True)
        assert "Traceback" not in text and data_dir not in text and bot.token not in text


def test_a_too_large_body_is_refused(bot):
    # What the connection does after it: tests/infra/test_wire.py, over real HTTP.
    response = bot.raw("getMe", b"{}" + b" " * (1024 * 1024))
    assert_failure(response, 413, "REQUEST_TOO_LARGE")


@pytest.mark.parametrize("method,field,value", [
    ("sendMessage", "reply_markup", "[" * 100000 + "]" * 100000),
    ("getUpdates", "offset", "[" * 5000 + "]" * 5000),
])
def test_deeply_nested_form_values_are_invalid_not_a_crash(bot, chat, method, field, value):
    data = {field: value, **({"chat_id": chat.chat_id, "text": "x"} if method == "sendMessage"
                             else {})}
    assert_invalid(bot.call(method, data=data), field)


@pytest.mark.parametrize("params, path", [
    ({"reply_markup": {"inline_keyboard": None}}, "reply_markup.inline_keyboard"),
    ({"reply_markup": {"inline_keyboard": [[{"text": "a", "url": None}]]}},
     "reply_markup.inline_keyboard.0.0.url"),
])
def test_null_is_refused_where_it_stands_by_its_path(bot, chat, params, path):
    refused = assert_invalid(bot.call("sendMessage", {"chat_id": chat.chat_id, "text": "x",
                                                      **params}), "reply_markup")
    assert refused["parameters"]["path"] == path
    assert refused["description"] == f"{path}: must not be null"


def test_a_null_cursor_is_the_first_page_but_not_in_a_form(bot, chat):
    # The one parameter null is taken for (docs/api.md): clients often send it.
    first_page = bot.ok("getSubscribers", cursor=None)
    assert [member["chat_id"] for member in first_page["subscribers"]] == [chat.chat_id]
    assert first_page["next_cursor"] is None
    # A form value is text: "null" is not a cursor the service issued.
    assert_invalid(bot.call("getSubscribers", data={"cursor": "null"},
                            content_type="application/x-www-form-urlencoded"), "cursor")
    assert_invalid(bot.call("getSubscribers", data={"limit": "null"},
                            content_type="application/x-www-form-urlencoded"), "limit")
