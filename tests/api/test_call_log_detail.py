"""The call log keeps no secret, more detail on request, and answers
filtered queries (docs/call-log.md): getBotCalls' ``detail``,
``after_call_id``, ``chat_id``, ``since``/``until`` and ``search``, and
migration 0013's scrub of the secrets kept before it."""
from __future__ import annotations

import json
import shutil
import sqlite3

import pytest

from botsvc.devkit.paths import REPO
from botsvc.migrations import migrate
from tests.support.contract import assert_invalid

pytestmark = pytest.mark.call_log
SECRET = "a-secret-token-of-16-chars"
BASE_FIELDS = {"call_id", "date", "method", "ok", "http_status", "duration_ms", "request_id",
               "error_code", "description", "idempotency_key", "replayed", "params", "result",
               "truncated"}


@pytest.fixture
def app(make_app):
    return make_app(test_tools=True)


def calls(operator, bot, **params) -> list[dict]:
    return operator("getBotCalls", bot_id=bot.id, **params)["calls"]


# -- no secret in any record ---------------------------------------------------------

def test_a_webhook_secret_is_replaced_in_ok_and_refused_calls(operator, bot):
    hook = "https://hooks.example.net/hook"
    bot.ok("setWebhook", url=hook, secret_token=SECRET)
    bot.error("setWebhook", 400, "INVALID_PARAMETER", url="ftp://x", secret_token=SECRET)
    bot.error("setWebhook", 400, "INVALID_PARAMETER", url=hook, secret_token="short")
    bot.error("setWebhook", 400, "INVALID_PARAMETER", url=f"{hook}?s={SECRET}", secret_token=SECRET,
              extra=1)
    for detail in (False, True):
        page = operator("getBotCalls", bot_id=bot.id, detail=detail)
        assert SECRET not in json.dumps(page) and "short" not in json.dumps(page)
    unknown, short, bad_url, ok = calls(operator, bot)
    assert ok["ok"] and ok["params"] == {"url": hook, "secret_token": "[secret]"}
    assert bad_url["params"] == {"url": "ftp://x", "secret_token": "[secret]"}
    assert short["params"] == {"url": hook, "secret_token": "[secret]"}
    # Where the bot put it elsewhere too (long enough to be told from other text).
    assert unknown["params"]["url"] == f"{hook}?s=[secret]"


def test_a_secret_sent_as_a_form_is_replaced(client, operator, bot):
    answer = client.post("/v2/setWebhook", data={"url": "https://hooks.example.net/h",
                                                 "secret_token": SECRET},
                         headers={"Authorization": f"Bearer {bot.token}"})
    assert answer.status_code == 200
    assert calls(operator, bot)[0]["params"] == {"url": "https://hooks.example.net/h",
                                                 "secret_token": "[secret]"}


def test_migration_0013_scrubs_the_secrets_kept_before_it(tmp_path):
    older = tmp_path / "migrations"
    older.mkdir()
    for path in (REPO / "migrations").glob("*.sql"):
        if path.name < "0013_":   # the schema as 0013 found it
            shutil.copy(path, older / path.name)
    db = tmp_path / "botsvc.db"
    migrate(str(db), str(older))
    conn = sqlite3.connect(str(db))
    row = ("INSERT INTO bot_calls (bot_id, date, method, http_status, duration_ms, request_id,"
           " replayed, truncated, params) VALUES (1, 1, ?, 200, 1.0, 'r', 0, 0, ?)")
    conn.execute(row, ("setWebhook", json.dumps({"url": "https://h.example/x",
                                                 "secret_token": SECRET})))
    conn.execute(row, ("sendMessage", json.dumps({"chat_id": "c", "text": "secret_token"})))
    conn.execute(row, ("setWebhook", "not json"))
    conn.commit()
    conn.close()
    migrate(str(db))
    conn = sqlite3.connect(str(db))
    kept = [r[0] for r in conn.execute("SELECT params FROM bot_calls ORDER BY call_id")]
    conn.close()
    assert json.loads(kept[0]) == {"url": "https://h.example/x", "secret_token": "[secret]"}
    assert json.loads(kept[1]) == {"chat_id": "c", "text": "secret_token"}
    assert kept[2] == "not json"


# -- detail ----------------------------------------------------------------------------

def test_the_default_record_keeps_the_contract_fields_only(operator, bot, chat):
    operator("injectFault", bot_id=bot.id, method="getMe", error_code="RATE_LIMITED")
    bot.error("getMe", 429, "RATE_LIMITED")
    bot.call("sendMessage", {"chat_id": chat.chat_id, "text": "x" * 20000})
    for record in calls(operator, bot):
        assert set(record) <= BASE_FIELDS


def test_detail_keeps_error_parameters_and_injected_faults_and_delays(operator, bot, chat):
    operator("injectFault", bot_id=bot.id, method="getMe", error_code="RATE_LIMITED")
    bot.error("getMe", 429, "RATE_LIMITED")
    operator("injectFault", bot_id=bot.id, method="getMe", delay_ms=5)
    bot.ok("getMe")
    operator("injectFault", bot_id=bot.id, method="getMe", error_code="INTERNAL_ERROR",
             delay_ms=5)
    bot.error("getMe", 500, "INTERNAL_ERROR")
    bot.error("sendMessage", 400, "INVALID_PARAMETER", chat_id=chat.chat_id)
    bot.ok("getMe")
    plain, missing, both, delayed, limited = calls(operator, bot, detail=True)
    assert limited["error_parameters"] == {"injected": True, "retry_after": 1}
    assert limited["injected"] == {"error_code": "RATE_LIMITED"}
    assert delayed["ok"] and delayed["injected"] == {"delay_ms": 5}
    assert "error_parameters" not in delayed
    assert both["injected"] == {"error_code": "INTERNAL_ERROR", "delay_ms": 5}
    assert missing["error_parameters"]["field"] == "text"
    assert "injected" not in missing
    assert set(plain) <= BASE_FIELDS


def test_params_too_large_keep_a_preview_of_each_field(operator, bot, chat):
    text = "é" * 8192            # 16,384 bytes: with chat_id, params are over the bound
    answer = bot.call("sendMessage", {"chat_id": chat.chat_id, "text": text, "flag": True})
    assert answer.status_code == 400                     # an unknown parameter: refused
    record = calls(operator, bot, detail=True)[0]
    assert record["truncated"] is True and "params" not in record
    assert record["error_parameters"] == {"field": "flag"}
    preview = record["params_preview"]
    assert preview["chat_id"] == chat.chat_id
    assert preview["text"] == "é" * 128       # 256 bytes, no character cut in two
    assert preview["flag"] == "true"                     # its compact JSON
    assert record["cut_fields"] == ["text"]
    plain = calls(operator, bot)[0]
    assert "params_preview" not in plain and "cut_fields" not in plain


# -- filters ---------------------------------------------------------------------------

def test_after_call_id_pages_every_newer_record_with_no_gap(operator, bot):
    for _ in range(3):
        bot.ok("getMe")
    mark = calls(operator, bot)[0]["call_id"]
    for _ in range(7):
        bot.ok("getMe")
    first = operator("getBotCalls", bot_id=bot.id, after_call_id=mark, limit=3)
    seen = [c["call_id"] for c in first["calls"]]
    cursor = first["next_cursor"]
    while cursor is not None:
        more = operator("getBotCalls", bot_id=bot.id, after_call_id=mark, cursor=cursor,
                        limit=3)
        seen += [c["call_id"] for c in more["calls"]]
        cursor = more["next_cursor"]
    assert len(seen) == 7 and min(seen) > mark and seen == sorted(seen, reverse=True)
    assert calls(operator, bot, after_call_id=max(seen)) == []


def test_chat_since_until_and_search(clock, operator, bot, chat, start_chat):
    other = start_chat(bot)
    bot.ok("sendMessage", chat_id=chat.chat_id, text="Hello World")
    clock.advance(100)
    later = int(clock.now)
    bot.ok("sendMessage", chat_id=other.chat_id, text="goodbye")
    bot.ok("sendMessage", chat_id=chat.chat_id, text="x" * 16378 + "NEEDLE")
    bot.ok("getMe")

    def texts(**filters) -> list[str]:
        return [c["params"]["text"] if "params" in c else "<cut>"
                for c in calls(operator, bot, method="sendMessage", **filters)]

    assert texts(chat_id=chat.chat_id) == ["<cut>", "Hello World"]   # the cut one by its preview
    assert texts(chat_id=other.chat_id) == ["goodbye"]
    assert texts(since=later) == ["<cut>", "goodbye"]
    assert texts(until=later - 1) == ["Hello World"]
    assert texts(since=later - 100, until=later - 100) == ["Hello World"]
    assert texts(search="hello WORLD") == ["Hello World"]
    assert texts(search="needle") == []          # past the preview's 256 bytes: not kept
    name = bot.ok("getMe")["username"]
    assert [c["method"] for c in calls(operator, bot, search=name.upper())] == ["getMe"] * 2
    assert calls(operator, bot, search="no such text anywhere") == []


@pytest.mark.parametrize("params, field", [
    ({"after_call_id": -1}, "after_call_id"),
    ({"after_call_id": "1"}, "after_call_id"),
    ({"chat_id": ""}, "chat_id"),
    ({"chat_id": "c" * 257}, "chat_id"),
    ({"since": -1}, "since"),
    ({"until": "today"}, "until"),
    ({"since": 10, "until": 9}, "until"),
    ({"search": ""}, "search"),
    ({"search": "é" * 129}, "search"),        # 258 bytes
    ({"detail": "yes"}, "detail"),
])
def test_bad_filters_are_refused(operator, bot, params, field):
    assert_invalid(operator.call("getBotCalls", bot_id=bot.id, **params), field)


def test_a_filtered_query_reads_only_the_bots_own_rows(app, operator, bot, new_bot, db):
    other = new_bot()
    for _ in range(5):
        other.ok("getMe")
    bot.ok("getMe")
    operator("getBotCalls", bot_id=bot.id)
    statements = []
    db.set_trace_callback(statements.append)
    from botsvc.domain import call_log
    call_log.calls_page(db, bot.id, 10, None, 2e9, where=call_log.CallFilter(
        method="getMe", failures_only=True, after_call_id=1, chat_id="c", since=1, until=2**40,
        search="x"), detail=True)
    db.set_trace_callback(None)
    query = next(s for s in statements if s.startswith("SELECT * FROM bot_calls"))
    plan = [row[3] for row in db.execute("EXPLAIN QUERY PLAN " + query.replace("?", "1"))]
    assert any(step.startswith("SEARCH bot_calls USING INDEX bot_calls_by_bot (bot_id=? AND")
               for step in plan), plan
    assert not any(step.startswith("SCAN") for step in plan), plan


def test_the_openapi_document_describes_the_filters_and_the_detail():
    from botsvc.openapi.document import build
    schemas = build("http://localhost")["components"]["schemas"]
    request = schemas["BotCalls"]["properties"]
    assert {"after_call_id", "chat_id", "since", "until", "search", "detail"} <= set(request)
    record = schemas["BotCall"]["properties"]
    assert {"error_parameters", "injected", "params_preview", "cut_fields"} <= set(record)
    assert set(schemas["InjectedIntoCall"]["properties"]) == {"error_code", "delay_ms"}
    assert "error_parameters" not in schemas["BotCall"].get("required", [])


def test_filters_read_deeply_nested_params(operator, bot, chat):
    deep = "[" * 900 + "]" * 900            # as deep as a body may be: kept as sent
    answer = bot.raw("sendMessage", f'{{"chat_id":"{chat.chat_id}","text":"x","z":{deep}}}'
                     .encode())
    assert answer.status_code == 400                  # z: an unknown parameter
    bot.ok("sendMessage", chat_id=chat.chat_id, text="plain")
    found = calls(operator, bot, chat_id=chat.chat_id)
    assert [c["params"]["text"] for c in found] == ["plain", "x"]
    assert [c["params"]["text"] for c in calls(operator, bot, search="[[")] == ["x"]
