"""Edit and resend: resendCall with ``params`` sends those parameters instead
of the kept ones, as the bot, through the same path as a plain re-send; the
call's method's own schema judges them first (a refusal names the field
under ``params``, and nothing is sent)."""
from __future__ import annotations

import pytest

from tests.support.contract import assert_invalid

pytestmark = pytest.mark.call_log


def calls_of(operator, bot, **params):
    return operator("getBotCalls", bot_id=bot.id, **params)["calls"]


def test_changed_parameters_go_instead_of_the_kept_ones(operator, bot, chat):
    bot.ok("sendMessage", chat_id=chat.chat_id, text="first try")
    [record] = calls_of(operator, bot, method="sendMessage")
    edited = {**record["params"], "text": "second try \"quoted\" <b>",
              "reply_markup": {"inline_keyboard": [[{"text": "A", "callback_data": "a"}]]}}
    again = operator("resendCall", bot_id=bot.id, call_id=record["call_id"], params=edited)
    assert set(again) == {"method", "sent_as", "ok", "http_status", "request_id", "result"}
    assert (again["method"], again["sent_as"], again["ok"]) == ("sendMessage", "json", True)
    assert again["result"]["text"] == "second try \"quoted\" <b>"
    newest = calls_of(operator, bot, method="sendMessage")[0]
    assert newest["request_id"] == again["request_id"] and newest["params"] == edited
    # Marked as a re-send of the call edited, as a plain re-send is.
    detailed = calls_of(operator, bot, method="sendMessage", detail=True)[0]
    assert detailed["resent_from"] == record["call_id"]
    texts = [m.get("text") for m in operator("userGetChat", user_id=chat.user_id,
                                             bot_id=bot.id)["messages"]]
    assert texts[-2:] == ["first try", "second try \"quoted\" <b>"]


def test_parameters_the_methods_schema_refuses_are_not_sent(operator, bot, chat):
    bot.ok("sendMessage", chat_id=chat.chat_id, text="kept")
    [record] = calls_of(operator, bot, method="sendMessage")
    before = len(calls_of(operator, bot))
    for params, path in [({"chat_id": chat.chat_id}, "params.text"),
                         ({"chat_id": chat.chat_id, "text": "x" * 4097 * 4}, "params.text"),
                         ({"chat_id": chat.chat_id, "text": "a", "nope": 1}, "params.nope"),
                         ({**record["params"], "reply_markup": {"inline_keyboard": "x"}},
                          "params.reply_markup.inline_keyboard")]:
        body = assert_invalid(operator.call("resendCall", bot_id=bot.id,
                                            call_id=record["call_id"], params=params), "params")
        assert body["parameters"]["path"] == path, body
        assert body["description"].startswith("The edited parameters are not a valid sendMessage")
    assert len(calls_of(operator, bot)) == before          # nothing was sent
    assert_invalid(operator.call("resendCall", bot_id=bot.id, call_id=record["call_id"],
                                 params=["not", "an", "object"]), "params")


def test_the_token_mark_is_refused_and_a_cut_call_can_be_edited(operator, bot, chat):
    bot.ok("sendMessage", chat_id=chat.chat_id, text="x" * 16384)   # kept cut
    [cut] = calls_of(operator, bot, method="sendMessage")
    assert cut.get("truncated") is True
    body = assert_invalid(operator.call("resendCall", bot_id=bot.id, call_id=cut["call_id"],
                                        params={"chat_id": chat.chat_id, "text": "[token]"}),
                          "params")
    assert "[token]" in body["description"]
    again = operator("resendCall", bot_id=bot.id, call_id=cut["call_id"],
                     params={"chat_id": chat.chat_id, "text": "shorter"})
    assert again["ok"] is True and again["result"]["text"] == "shorter"


def test_an_unknown_methods_record_is_still_refused(operator, bot):
    bot.call("noSuchMethod")
    [unknown] = calls_of(operator, bot)
    body = assert_invalid(operator.call("resendCall", bot_id=bot.id, call_id=unknown["call_id"],
                                        params={}), "call_id")
    assert body["parameters"]["reason"] == "unknown_method"
