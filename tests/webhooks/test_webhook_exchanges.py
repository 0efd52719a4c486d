"""What a delivery attempt's record keeps of its request and response
(getWebhookDeliveries with ``detail``): headers and body of each, bounded to
4 KiB, the secret and credentials redacted; the default shape unchanged."""
from __future__ import annotations

import json

import pytest

from botsvc.devkit.receivers import answer, hang
from botsvc.webhooks.transport import USER_AGENT, DeliveryOptions, deliver
from tests.support.contract import assert_invalid
from tests.webhooks.support import HOST, SECRET

REDACTED = "[redacted]"
SHORT_SHAPE = {"update_id", "attempt", "started_at", "duration_ms", "http_status"}


@pytest.fixture
def app(make_app, ca_file):
    return make_app(webhook_allow_private=True, webhook_ca_bundle=ca_file)


def only_record(operator, bot, **params) -> dict:
    [record] = operator("getWebhookDeliveries", bot_id=bot.id, **params)["deliveries"]
    return record


def test_detail_adds_the_request_and_the_response(bot, chat, operator, hook, run_pass):
    receiver = hook(bot, answer(201, headers={"X-Receiver": "yes"}, body=b'{"ok":true}'))
    run_pass()
    assert set(only_record(operator, bot)) == SHORT_SHAPE
    assert set(only_record(operator, bot, detail=False)) == SHORT_SHAPE
    record = only_record(operator, bot, detail=True)
    assert set(record) == SHORT_SHAPE | {"request", "response"}
    [sent] = receiver.requests
    assert record["request"] == {
        "headers": {"Host": f"{HOST}:{receiver.port}", "Content-Type": "application/json",
                    "User-Agent": USER_AGENT, "X-Platform-Bot-Secret-Token": REDACTED},
        "body": sent["body"].decode(), "body_truncated": False}
    assert json.loads(record["request"]["body"])["update_id"] == chat.update_id
    response = record["response"]
    assert set(response) == {"headers", "body", "body_truncated"}
    assert response["headers"]["X-Receiver"] == "yes"
    assert response["headers"]["Content-Length"] == "11"
    assert response["body"] == '{"ok":true}' and response["body_truncated"] is False


def test_the_secret_and_credentials_never_reach_the_record(bot, chat, operator, hook,
                                                           run_pass):
    echo = answer(200, headers={"Set-Cookie": "session=abc", "X-Echo": f"token {SECRET}",
                                "WWW-Authenticate": "Basic"}, body=f"got {SECRET}!".encode())
    hook(bot, echo)
    run_pass()
    page = operator("getWebhookDeliveries", bot_id=bot.id, detail=True)
    assert SECRET not in json.dumps(page) and "session=abc" not in json.dumps(page)
    [record] = page["deliveries"]
    assert record["request"]["headers"]["X-Platform-Bot-Secret-Token"] == REDACTED
    headers = record["response"]["headers"]
    assert headers["Set-Cookie"] == REDACTED and headers["X-Echo"] == f"token {REDACTED}"
    assert headers["WWW-Authenticate"] == "Basic"
    assert record["response"]["body"] == f"got {REDACTED}!"


def test_no_answer_keeps_the_request_and_no_response(bot, chat, operator, local_dns,
                                                    dead_port, run_pass):
    bot.ok("setWebhook", url=f"https://{HOST}:{dead_port}/hook", secret_token=SECRET)
    run_pass()
    record = only_record(operator, bot, detail=True)
    assert "response" not in record and "http_status" not in record
    assert record["request"]["headers"]["Host"] == f"{HOST}:{dead_port}"
    assert record["request"]["body_truncated"] is False


@pytest.mark.parametrize("value", ["true", 1, None, []])
def test_detail_is_a_boolean(operator, bot, value):
    assert_invalid(operator.call("getWebhookDeliveries", bot_id=bot.id, detail=value), "detail")


def test_records_from_before_the_detail_was_kept_show_none(app, bot, chat, operator, hook,
                                                          run_pass, db):
    hook(bot)
    run_pass()
    db.execute("UPDATE webhook_deliveries SET request_headers = NULL, request_body = NULL,"
               " request_body_truncated = NULL, response_headers = NULL, response_body = NULL,"
               " response_body_truncated = NULL")
    assert set(only_record(operator, bot, detail=True)) == SHORT_SHAPE


# -- the bounds, on the transport's result ----------------------------------

@pytest.fixture
def local(fake_resolver):
    return fake_resolver({HOST: ["127.0.0.1"]})


def send(receiver, local, ca_file, body: bytes = b"{}", **options):
    return deliver(f"https://{HOST}:{receiver.port}/", body, SECRET,
                   DeliveryOptions(allow_private=True, resolve=local, ca_certs=ca_file,
                                   **{"timeout": 5.0, **options}))


def test_bodies_are_cut_at_4_KiB_on_a_character_boundary(make_receiver, local, ca_file):
    long_answer = ("a" + "é" * 5000).encode()           # 4096 bytes end inside an é
    receiver = make_receiver(answer(200, body=long_answer), cert_for=HOST)
    result = send(receiver, local, ca_file, body=b"x" * 5000)
    assert result.ok is True
    assert result.request.body == "x" * 4096 and result.request.body_truncated is True
    assert result.response.body == "a" + "é" * 2047 and result.response.body_truncated is True


def test_a_body_that_is_not_utf8_is_kept_as_text(make_receiver, local, ca_file):
    receiver = make_receiver(answer(500, body=b"\xff\xfeok"), cert_for=HOST)
    result = send(receiver, local, ca_file)
    assert result.status == 500 and result.response.body == "\ufffd\ufffdok"
    assert result.response.body_truncated is False


def test_response_headers_are_kept_whole_within_4_KiB(make_receiver, local, ca_file):
    many = {f"X-Filler-{n:03d}": "v" * 100 for n in range(60)}    # about 7 KiB
    receiver = make_receiver(answer(200, headers=many), cert_for=HOST)
    headers = send(receiver, local, ca_file).response.headers
    size = sum(len(name) + len(value) + 4 for name, value in headers.items())
    assert 4096 - 120 < size <= 4096
    fillers = [name for name in headers if name.startswith("X-Filler-")]
    assert fillers == [f"X-Filler-{n:03d}" for n in range(len(fillers))]   # in order, whole
    assert all(headers[name] == "v" * 100 for name in fillers)


def test_a_receiver_that_never_answers_leaves_no_response(make_receiver, local, ca_file):
    receiver = make_receiver(hang, cert_for=HOST)
    result = send(receiver, local, ca_file, timeout=0.3)
    assert result.error == "no response within 0.3 s" and result.response is None
    assert result.request.headers["X-Platform-Bot-Secret-Token"] == REDACTED


def test_a_refused_url_keeps_the_body_and_no_headers(fake_resolver):
    result = deliver("https://hooks.example.com:8443/", b'{"update_id":1}', SECRET,
                     DeliveryOptions(allow_private=False, resolve=fake_resolver({})))
    assert result.ok is False and result.error.startswith("the webhook URL is not valid")
    assert result.request.headers == {} and result.request.body == '{"update_id":1}'
    assert result.response is None
