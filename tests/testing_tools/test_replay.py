"""redeliverUpdate and resendCall: a kept update delivered again as a new
update (marked as a replay in the operator's views, never in the bot's
Update), and a call of the bot's call log sent again as the bot would, through
the /v2 dispatcher. Both exist only with BOTSVC_TEST_TOOLS=1."""
from __future__ import annotations

import pytest

from tests.support.contract import Operator, assert_failure, assert_invalid
from tests.support.media_files import image_bytes, multipart


@pytest.fixture
def scanner_settings(offline_scanner) -> dict:
    return offline_scanner   # one test uploads a photo


UPDATE_FIELDS = {"update_id", "message", "membership"}   # a Start


def poll(bot, offset=0):
    return bot.ok("getUpdates", offset=offset)


def calls_of(operator, bot, **params):
    return operator("getBotCalls", bot_id=bot.id, **params)["calls"]


# -- only with the testing tools ---------------------------------------------------

@pytest.mark.parametrize("method, params", [("redeliverUpdate", {"update_id": 1}),
                                            ("resendCall", {"call_id": 1})])
def test_absent_without_the_testing_tools(make_app, method, params):
    operator = Operator(make_app(test_tools=False).test_client())
    bot_id = operator("createBot", username="plain_bot")["bot"]["id"]
    assert_failure(operator.call(method, bot_id=bot_id, **params), 404, "METHOD_NOT_FOUND")


# -- redeliverUpdate ---------------------------------------------------------------

def test_an_acknowledged_update_comes_again_by_polling_with_a_new_update_id(operator, bot,
                                                                             chat):
    [first] = poll(bot)
    assert first["update_id"] == chat.update_id
    assert poll(bot, offset=chat.update_id + 1) == []       # acknowledged: gone from the queue
    replay = operator("redeliverUpdate", bot_id=bot.id, update_id=chat.update_id)
    assert set(replay) == {"update_id", "replay_of"}
    assert replay["replay_of"] == chat.update_id and replay["update_id"] > chat.update_id
    [again] = poll(bot, offset=chat.update_id + 1)
    # The bot's Update shape is its contract: no mark, the same content.
    assert set(again) == set(first) == UPDATE_FIELDS
    assert again == {**first, "update_id": replay["update_id"]}


def test_a_pending_update_and_a_replay_can_be_replayed(operator, bot, chat):
    one = operator("redeliverUpdate", bot_id=bot.id, update_id=chat.update_id)
    two = operator("redeliverUpdate", bot_id=bot.id, update_id=one["update_id"])
    assert two == {"update_id": two["update_id"], "replay_of": one["update_id"]}
    ids = [u["update_id"] for u in poll(bot)]
    assert ids == [chat.update_id, one["update_id"], two["update_id"]]


def test_errors_name_the_field(operator, bot, chat, new_bot):
    assert_invalid(operator.call("redeliverUpdate", bot_id=999999, update_id=chat.update_id),
                   "bot_id")
    other = new_bot()
    # Another bot's update, and one that never was.
    assert_invalid(operator.call("redeliverUpdate", bot_id=other.id, update_id=chat.update_id),
                   "update_id")
    assert_invalid(operator.call("redeliverUpdate", bot_id=bot.id,
                                 update_id=chat.update_id + 1000), "update_id")
    assert_invalid(operator.call("redeliverUpdate", bot_id=bot.id, update_id=0), "update_id")
    assert_invalid(operator.call("redeliverUpdate", bot_id=bot.id), "update_id")
    assert poll(other) == []


def test_an_update_no_longer_kept_is_refused(operator, bot, chat, db):
    poll(bot, offset=chat.update_id + 1)
    # The chat's journal is the kept copy; history retention removes it.
    db.execute("DELETE FROM chat_events")
    db.commit()
    body = assert_invalid(operator.call("redeliverUpdate", bot_id=bot.id,
                                        update_id=chat.update_id), "update_id")
    assert "kept" in body["description"]


def test_an_expired_replay_is_no_longer_kept(operator, bot, chat, clock):
    replay = operator("redeliverUpdate", bot_id=bot.id, update_id=chat.update_id)
    clock.advance(24 * 3600 + 1)
    assert_invalid(operator.call("redeliverUpdate", bot_id=bot.id,
                                 update_id=replay["update_id"]), "update_id")


# -- resendCall --------------------------------------------------------------------

@pytest.mark.call_log
def test_a_json_call_is_sent_again_through_the_dispatcher(operator, bot, chat):
    sent = bot.ok("sendMessage", chat_id=chat.chat_id, text="hello again")
    [record] = calls_of(operator, bot, method="sendMessage")
    again = operator("resendCall", bot_id=bot.id, call_id=record["call_id"])
    assert set(again) == {"method", "sent_as", "ok", "http_status", "request_id", "result"}
    assert (again["method"], again["sent_as"], again["ok"], again["http_status"]) == (
        "sendMessage", "json", True, 200)
    assert again["result"]["text"] == "hello again"
    assert again["result"]["message_id"] > sent["message_id"]      # a new message
    # The user sees it; the call log has it as the bot's own call.
    messages = operator("userGetChat", user_id=chat.user_id, bot_id=bot.id)["messages"]
    assert [m["text"] for m in messages if m.get("text") == "hello again"] == ["hello again"] * 2
    newest = calls_of(operator, bot, method="sendMessage")[0]
    assert newest["request_id"] == again["request_id"]
    assert newest["params"] == record["params"] and newest["ok"] is True
    # Marked as a re-send under detail, as an injected fault is; the default
    # record keeps the contract's fields and no others.
    assert set(newest) == set(record) and "resent_from" not in newest
    detailed = calls_of(operator, bot, method="sendMessage", detail=True)
    assert detailed[0]["resent_from"] == record["call_id"]
    assert "resent_from" not in detailed[1]


@pytest.mark.call_log
def test_a_message_over_the_records_bound_is_kept_whole_under_detail(operator, bot, chat):
    """The contract's longest text with the largest keyboard: params and
    result are left out of the record (truncated, as the contract says),
    and its detail keeps the Message whole (result_whole)."""
    text = ("\0é" * 8192)[:16384 // 3 * 2]
    keyboard = {"inline_keyboard": [[{"text": "b" * 128, "callback_data": "c" * 256}
                                     for _ in range(8)] for _ in range(10)]}
    sent = bot.ok("sendMessage", chat_id=chat.chat_id, text=text, reply_markup=keyboard)
    [plain] = calls_of(operator, bot, method="sendMessage")
    assert "params" not in plain and "result" not in plain and plain["truncated"] is True
    assert "result_whole" not in plain
    [detailed] = calls_of(operator, bot, method="sendMessage", detail=True)
    assert detailed["result_whole"] == sent
    # Only a message is kept whole: a long refusal's params keep their preview.
    bot.error("sendMessage", 400, "INVALID_PARAMETER", chat_id=chat.chat_id, text=text + "x" * 20000)
    failed = calls_of(operator, bot, method="sendMessage", detail=True)[0]
    assert "result_whole" not in failed and "params_preview" in failed


@pytest.mark.call_log
def test_a_form_call_goes_again_as_a_form(operator, bot, chat):
    markup = '{"inline_keyboard": [[{"text": "A", "callback_data": "a"}]]}'
    response = bot.call("sendMessage", data={"chat_id": chat.chat_id, "text": "pick",
                                             "reply_markup": markup})
    assert response.status_code == 200
    [record] = calls_of(operator, bot, method="sendMessage")
    again = operator("resendCall", bot_id=bot.id, call_id=record["call_id"])
    assert again["sent_as"] == "form" and again["ok"] is True
    assert again["result"]["reply_markup"]["inline_keyboard"][0][0]["text"] == "A"


@pytest.mark.call_log
def test_a_failed_call_fails_again_with_its_envelope(operator, bot, chat):
    bot.error("sendMessage", 404, "CHAT_NOT_FOUND", chat_id="vc_" + "0" * 40, text="x")
    [record] = calls_of(operator, bot, method="sendMessage")
    again = operator("resendCall", bot_id=bot.id, call_id=record["call_id"])
    assert set(again) == {"method", "sent_as", "ok", "http_status", "request_id", "error_code",
                          "description", "parameters"}
    assert (again["ok"], again["http_status"], again["error_code"]) == (
        False, 404, "CHAT_NOT_FOUND")


@pytest.mark.call_log
def test_a_resent_call_meets_the_bots_faults(operator, bot, chat):
    bot.ok("getMe")
    [record] = calls_of(operator, bot, method="getMe")
    operator("injectFault", bot_id=bot.id, method="getMe", error_code="BOT_BLOCKED")
    again = operator("resendCall", bot_id=bot.id, call_id=record["call_id"])
    assert (again["http_status"], again["error_code"]) == (403, "BOT_BLOCKED")
    assert again["parameters"] == {"injected": True}


@pytest.mark.call_log
def test_resend_refusals(operator, bot, chat, new_bot):
    assert_invalid(operator.call("resendCall", bot_id=999999, call_id=1), "bot_id")
    bot.ok("getMe")
    [record] = calls_of(operator, bot)
    other = new_bot()
    # Another bot's call, and one that never was.
    assert_invalid(operator.call("resendCall", bot_id=other.id, call_id=record["call_id"]),
                   "call_id")
    assert_invalid(operator.call("resendCall", bot_id=bot.id, call_id=record["call_id"] + 99),
                   "call_id")
    # An unknown method's record.
    bot.call("noSuchMethod")
    unknown = calls_of(operator, bot)[0]
    assert unknown["method"] == "noSuchMethod"
    body = assert_invalid(operator.call("resendCall", bot_id=bot.id,
                                        call_id=unknown["call_id"]), "call_id")
    assert body["parameters"]["reason"] == "unknown_method"


@pytest.mark.call_log
def test_params_not_kept_whole_are_refused_with_their_reason(operator, bot, chat):
    # A valid text of 16,384 bytes: with chat_id around it, over the log's bound.
    bot.ok("sendMessage", chat_id=chat.chat_id, text="x" * 16384)
    bot.raw("sendMessage", b"{not json")                     # a body that was not read
    unread, cut = calls_of(operator, bot, method="sendMessage")
    assert "params" not in unread and cut.get("truncated") is True
    for record in (unread, cut):
        body = assert_invalid(operator.call("resendCall", bot_id=bot.id,
                                            call_id=record["call_id"]), "call_id")
        assert body["parameters"]["reason"] == "params_not_kept"


@pytest.mark.call_log
def test_a_call_that_held_the_token_is_refused(operator, bot, chat):
    bot.ok("sendMessage", chat_id=chat.chat_id, text=f"my token is {bot.token}")
    [record] = calls_of(operator, bot, method="sendMessage")
    assert "[token]" in record["params"]["text"]
    body = assert_invalid(operator.call("resendCall", bot_id=bot.id,
                                        call_id=record["call_id"]), "call_id")
    assert body["parameters"]["reason"] == "params_not_kept"


@pytest.mark.call_log
def test_a_file_upload_is_refused(operator, bot, chat):
    response = multipart(bot, "sendPhoto", {"photo": (image_bytes("png"), "p.png", "image/png")},
                         chat_id=chat.chat_id)
    assert response.status_code == 200, response.get_json()
    [record] = calls_of(operator, bot, method="sendPhoto")
    assert record["params"]["photo"]["file_name"] == "p.png"
    body = assert_invalid(operator.call("resendCall", bot_id=bot.id,
                                        call_id=record["call_id"]), "call_id")
    assert body["parameters"]["reason"] == "file_upload"
    # The same photo by its file_id is a call that can go again.
    file_id = response.get_json()["result"]["media"]["file_id"]
    bot.ok("sendPhoto", chat_id=chat.chat_id, photo=file_id)
    by_id = calls_of(operator, bot, method="sendPhoto")[0]
    assert operator("resendCall", bot_id=bot.id, call_id=by_id["call_id"])["ok"] is True


@pytest.mark.call_log
def test_a_token_the_answer_reads_back_is_kept_out_of_the_record_and_the_answer(operator, bot,
                                                                                 chat):
    secret = bot.token.partition(":")[2]
    sent = bot.ok("sendMessage", chat_id=chat.chat_id, text=f"my token is {bot.token}")
    markup = {"inline_keyboard": [[{"text": "A", "callback_data": "a"}]]}
    edited = bot.ok("editMessageReplyMarkup", chat_id=chat.chat_id,
                    message_id=sent["message_id"], reply_markup=markup)
    assert secret in edited["text"]          # the bot's own answer holds what it stored
    [record] = calls_of(operator, bot, method="editMessageReplyMarkup")
    assert secret not in str(record)
    again = operator("resendCall", bot_id=bot.id, call_id=record["call_id"])
    assert again["ok"] is True and again["result"]["text"] == f"my token is {bot.id}:[token]"
    newest = calls_of(operator, bot, method="editMessageReplyMarkup")[0]
    assert newest["request_id"] == again["request_id"]
    assert secret not in str(newest) and "[token]" in newest["result"]["text"]


def test_replay_marks_expire_with_the_updates(app, operator, bot, chat, clock, db):
    from botsvc.jobs import run_job
    operator("redeliverUpdate", bot_id=bot.id, update_id=chat.update_id)
    assert db.execute("SELECT COUNT(*) FROM update_replays").fetchone()[0] == 1
    clock.advance(24 * 3600 - 60)
    run_job(app, "delete_expired_records")
    assert db.execute("SELECT COUNT(*) FROM update_replays").fetchone()[0] == 1
    clock.advance(120)              # past 24 hours, and the job's next turn (60 s)
    run_job(app, "delete_expired_records")
    assert db.execute("SELECT COUNT(*) FROM update_replays").fetchone()[0] == 0


@pytest.mark.call_log
def test_json_text_refused_as_json_is_refused_again(operator, bot, chat):
    markup = '{"inline_keyboard": [[{"text": "A", "callback_data": "a"}]]}'
    assert_invalid(bot.call("sendMessage", {"chat_id": chat.chat_id, "text": "pick",
                                            "reply_markup": markup}), "reply_markup")
    [record] = calls_of(operator, bot, method="sendMessage")
    again = operator("resendCall", bot_id=bot.id, call_id=record["call_id"])
    assert (again["sent_as"], again["http_status"], again["error_code"]) == (
        "json", 400, "INVALID_PARAMETER")
    assert again["parameters"]["field"] == "reply_markup"


@pytest.mark.call_log
def test_deeply_nested_params_are_sent_again_without_a_500(operator, bot):
    nested = "[" * 900 + "]" * 900
    response = bot.raw("getMe", f'{{"deep": {nested}}}'.encode())
    assert_invalid(response, "deep")
    [record] = calls_of(operator, bot, method="getMe")
    again = operator("resendCall", bot_id=bot.id, call_id=record["call_id"])
    assert (again["http_status"], again["error_code"]) == (400, "INVALID_PARAMETER")
