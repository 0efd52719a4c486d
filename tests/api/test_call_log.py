"""The bot's call log (getBotCalls, docs/call-log.md), in process: the exact
record of each kind of call, the bounds (16 KiB bodies, 1,000 calls, 24
hours), paging and filters, reset, and the writer's best effort."""
from __future__ import annotations

import contextlib
import io
import json
import sqlite3
import time

import pytest

from botsvc.call_log.writer import EXTENSION
from botsvc.db import checkpoint, connect
from botsvc.domain.call_log import BODY_MAX_BYTES, KEPT_PER_BOT
from botsvc.domain.call_records import TRIM_SLACK
from botsvc.jobs.runner import run_job
from botsvc.jsontext import dumps
from tests.support.contract import ADMIN_TOKEN, BotClient, Operator, assert_invalid
from tests.support.small_disk import fill, small_tmpfs

pytestmark = pytest.mark.call_log   # the log under test
MISSING_CHAT = "vc_" + "0" * 40
ABSENT = object()


@pytest.fixture
def app(make_app):
    return make_app(test_tools=True)


@pytest.fixture
def scanner_settings(offline_scanner) -> dict:
    return offline_scanner


def log_page(operator, bot, **params) -> dict:
    return operator("getBotCalls", bot_id=bot.id, **params)


def calls_of(operator, bot, **params) -> list[dict]:
    """Every record of the bot, newest first, across pages."""
    found, cursor = [], None
    while True:
        page = log_page(operator, bot, cursor=cursor, **params)
        found += page["calls"]
        cursor = page["next_cursor"]
        if cursor is None:
            return found


def expected(response, method: str, *, date: int, params=ABSENT, key: str | None = None,
             replayed: bool = False, truncated: bool = False) -> dict:
    """The record the contract asks for of this answer (call_id and
    duration_ms aside: they are checked on their own)."""
    body = response.get_json()
    record = {"date": date, "method": method, "ok": body["ok"],
              "http_status": response.status_code,
              "request_id": response.headers["X-Request-Id"]}
    if not body["ok"]:
        record.update(error_code=body["error_code"], description=body["description"])
    if key is not None:
        record["idempotency_key"] = key
    record["replayed"] = replayed
    if params is not ABSENT:
        record["params"] = params
    if body["ok"] and not truncated:
        record["result"] = body["result"]
    if truncated:
        record["truncated"] = True
    return record


def without_id_and_duration(records: list[dict]) -> list[dict]:
    ids = [r["call_id"] for r in records]
    assert all(isinstance(i, int) and i > 0 for i in ids)
    assert ids == sorted(ids, reverse=True) and len(set(ids)) == len(ids)   # newest first
    for r in records:
        assert isinstance(r["duration_ms"], (int, float)) and r["duration_ms"] >= 0
    return [{k: v for k, v in r.items() if k not in ("call_id", "duration_ms")}
            for r in records]


def test_the_records_of_a_known_sequence_of_calls(clock, client, operator, bot, chat):
    date = int(clock.now)
    hello = {"chat_id": chat.chat_id, "text": "hello"}
    auth = {"Authorization": f"Bearer {bot.token}"}
    answers = [
        ("sendMessage", bot.call("sendMessage", hello), dict(params=hello)),
        ("sendMessage", bot.call("sendMessage", {"chat_id": MISSING_CHAT, "text": "x"}),
         dict(params={"chat_id": MISSING_CHAT, "text": "x"})),
        ("sendMessage", bot.call("sendMessage", {"chat_id": chat.chat_id}),
         dict(params={"chat_id": chat.chat_id})),
        ("sendMessage", bot.call("sendMessage", hello, headers={"Idempotency-Key": "k-1"}),
         dict(params=hello, key="k-1")),
        ("sendMessage", bot.call("sendMessage", hello, headers={"Idempotency-Key": "k-1"}),
         dict(params=hello, key="k-1", replayed=True)),
        ("sendMesage", bot.call("sendMesage", hello), {}),           # no such method
        ("getMe", client.get("/v2/getMe", headers=auth), {}),         # 405
        ("getMe", bot.raw("getMe", b'{"a": '), {}),                   # not JSON
        ("getMe", bot.raw("getMe", b"{" + b" " * (1024 * 1024) + b"}"), {}),   # over 1 MiB
        ("getMe", bot.call("getMe"), dict(params={})),
    ]
    statuses = [response.status_code for _, response, _ in answers]
    assert statuses == [200, 404, 400, 200, 200, 404, 405, 400, 413, 200]
    assert answers[4][1].headers["Idempotent-Replayed"] == "true"
    want = [expected(response, method, date=date, **extra) for method, response, extra in answers]
    page = log_page(operator, bot)
    assert without_id_and_duration(page["calls"]) == want[::-1]
    assert page["next_cursor"] is None
    assert (page["empty_polls"], page["last_poll_at"]) == (0, None)
    # The replay holds the first call's result, as its answer did.
    assert page["calls"][5]["result"] == page["calls"][6]["result"]


def test_a_disabled_bot_and_a_disabled_platform_are_recorded_without_params(
        clock, operator, bot):
    operator("setBotDisabled", bot_id=bot.id, disabled=True)
    disabled = bot.call("getMe", {"a": 1})
    operator("setBotDisabled", bot_id=bot.id, disabled=False)
    operator("setPlatformDisabled", disabled=True)
    platform_off = bot.call("getMe")
    operator("setPlatformDisabled", disabled=False)
    assert (disabled.status_code, platform_off.status_code) == (403, 503)
    date = int(clock.now)
    assert without_id_and_duration(log_page(operator, bot)["calls"]) == [
        expected(platform_off, "getMe", date=date), expected(disabled, "getMe", date=date)]


def test_injected_failures_are_recorded(clock, operator, bot):
    operator("injectFault", bot_id=bot.id, method="getMe", error_code="INTERNAL_ERROR")
    failed = bot.call("getMe")
    assert failed.status_code == 500
    assert without_id_and_duration(log_page(operator, bot)["calls"]) == [
        expected(failed, "getMe", date=int(clock.now))]


def test_calls_without_a_valid_token_are_in_no_log(client, operator, bot, db):
    other = {"Authorization": f"Bearer {bot.token[:-1]}{'A' if bot.token[-1] != 'A' else 'B'}"}
    assert client.post("/v2/getMe", headers=other, json={}).status_code == 401
    assert client.post("/v2/nothing", headers=other, json={}).status_code == 404
    assert client.post("/v2/getMe", json={}).status_code == 401
    assert log_page(operator, bot)["calls"] == []
    assert db.execute("SELECT count(*) FROM bot_calls").fetchone()[0] == 0


def test_empty_polls_are_counted_not_recorded_and_every_poll_dates_the_last(
        clock, app, operator, bot, chat):
    start_update = chat.update_id
    assert log_page(operator, bot)["last_poll_at"] is None
    first = int(clock.now)
    polled = bot.ok("getUpdates")                       # the Start: recorded
    assert [u["update_id"] for u in polled] == [start_update]
    clock.advance(5)
    for _ in range(3):
        assert bot.ok("getUpdates", offset=start_update + 1) == []   # counted
    clock.advance(5)
    refused = bot.call("getUpdates", {"offset": -1})     # a failed poll: recorded
    assert refused.status_code == 400
    page = log_page(operator, bot)
    assert [c["method"] for c in page["calls"]] == ["getUpdates", "getUpdates"]
    assert page["calls"][1]["result"] == polled and page["calls"][1]["date"] == first
    assert page["calls"][0]["error_code"] == "INVALID_PARAMETER"
    assert (page["empty_polls"], page["last_poll_at"]) == (3, first + 10)
    clock.advance(5)
    assert bot.ok("getUpdates", offset=start_update + 1) == []
    page = log_page(operator, bot)
    assert (len(page["calls"]), page["empty_polls"], page["last_poll_at"]) == (2, 4, first + 15)


def compact_size(value) -> int:
    return len(dumps(value).encode())


def padded(fixed: dict, field: str, size: int) -> dict:
    """``fixed`` plus ``field`` holding text (two-byte characters, one
    ASCII if odd) that brings its compact JSON to exactly ``size`` bytes."""
    room = size - compact_size({**fixed, field: ""})
    return {**fixed, field: "é" * (room // 2) + "x" * (room % 2)}


def test_params_are_kept_up_to_16_kib_of_compact_json_and_left_out_above(operator, bot):
    fixed = {"chat_id": MISSING_CHAT}
    at_bound = padded(fixed, "text", BODY_MAX_BYTES)
    over = padded(fixed, "text", BODY_MAX_BYTES + 1)
    assert compact_size(at_bound) == BODY_MAX_BYTES and compact_size(over) == BODY_MAX_BYTES + 1
    # Sent with spaces: what counts is the compact JSON, not the bytes sent.
    spaced = json.dumps(at_bound, ensure_ascii=False, indent=4).encode()
    assert len(spaced) > BODY_MAX_BYTES
    bot.raw("sendMessage", spaced)
    bot.call("sendMessage", over)
    newest, oldest = log_page(operator, bot)["calls"]
    assert oldest["params"] == at_bound and "truncated" not in oldest
    assert "params" not in newest and newest["truncated"] is True
    assert newest["error_code"] == oldest["error_code"] == "CHAT_NOT_FOUND"


def test_a_result_is_kept_up_to_16_kib_and_left_out_above(operator, bot, chat):
    probe = bot.ok("sendMessage", chat_id=chat.chat_id, text="x")
    overhead = compact_size(probe) - 1      # the same digits follow: message_id 2 and 3
    texts = ["é" * ((BODY_MAX_BYTES - overhead) // 2) + "x" * ((BODY_MAX_BYTES - overhead) % 2)]
    texts.append(texts[0] + "y")
    results = [bot.ok("sendMessage", chat_id=chat.chat_id, text=text) for text in texts]
    assert [compact_size(r) for r in results] == [BODY_MAX_BYTES, BODY_MAX_BYTES + 1]
    newest, at_bound, _ = log_page(operator, bot)["calls"]
    assert at_bound["result"] == results[0] and "truncated" not in at_bound
    assert "result" not in newest and newest["truncated"] is True
    assert newest["params"] == {"chat_id": chat.chat_id, "text": texts[1]}


def test_multipart_fields_are_text_and_files_are_name_and_size(app, operator, bot, chat):
    keyboard = '{"inline_keyboard": [[{"text": "Go", "callback_data": "go"}]]}'
    sent = bot.call("sendMessage", data={"chat_id": chat.chat_id, "text": "form",
                                         "reply_markup": keyboard},
                    content_type="multipart/form-data")
    assert sent.status_code == 200, sent.get_json()
    content = b"file bytes that must stay out of the log\n"
    refused = bot.call("sendMessage", data={"chat_id": chat.chat_id, "text": "with a file",
                                            "photo": (io.BytesIO(content), "cat.jpg")},
                       content_type="multipart/form-data")
    assert refused.status_code == 400
    uploaded = bot.call("uploadFile", data={"file": (io.BytesIO(content), "notes.txt")},
                        content_type="multipart/form-data")
    assert uploaded.status_code == 200, uploaded.get_json()
    upload, with_file, form = log_page(operator, bot)["calls"]
    assert form["params"] == {"chat_id": chat.chat_id, "text": "form", "reply_markup": keyboard}
    assert form["result"] == sent.get_json()["result"]
    assert with_file["params"] == {"chat_id": chat.chat_id, "text": "with a file",
                                   "photo": {"file_name": "cat.jpg", "size": len(content)}}
    assert upload["params"] == {"file": {"file_name": "notes.txt", "size": len(content)}}
    assert upload["result"] == uploaded.get_json()["result"]
    database = app.config["SETTINGS"].db_path
    stored = b"".join(open(database + suffix, "rb").read()
                      for suffix in ("", "-wal") if _exists(database + suffix))
    assert content not in stored


def _exists(path: str) -> bool:
    try:
        open(path, "rb").close()
        return True
    except FileNotFoundError:
        return False


def test_the_bots_own_token_never_lands_in_a_record(operator, bot, chat):
    secret = bot.token.partition(":")[2]
    bot.call("sendMessage", {"chat_id": chat.chat_id, "text": f"my token is {bot.token}"})
    bot.call("getMe", {bot.token: 1})         # an unknown parameter named by the token
    text = json.dumps(log_page(operator, bot))
    assert secret not in text
    newest, sent = log_page(operator, bot)["calls"]
    assert sent["params"]["text"] == f"my token is {bot.id}:[token]"
    assert sent["result"]["text"] == f"my token is {bot.id}:[token]"
    assert newest["params"] == {f"{bot.id}:[token]": 1}
    assert newest["description"] == f"Unknown parameter: {bot.id}:[token]"


def stored_rows(db, bot) -> int:
    """The bot's rows in the table, past the bound or not."""
    return db.execute("SELECT count(*) FROM bot_calls WHERE bot_id = ?", (bot.id,)).fetchone()[0]


def test_the_newest_1000_calls_of_each_bot_are_kept(operator, bot, new_bot, db):
    other = new_bot()
    other.ok("getMe")
    calls = KEPT_PER_BOT + TRIM_SLACK + 5
    ids = [bot.call("getMe").headers["X-Request-Id"] for _ in range(calls)]
    records = calls_of(operator, bot)
    assert [r["request_id"] for r in records] == ids[-KEPT_PER_BOT:][::-1]
    assert len(calls_of(operator, other)) == 1
    # The table itself is kept near the bound: trimmed back to it about every
    # TRIM_SLACK records, however they were batched.
    assert KEPT_PER_BOT <= stored_rows(db, bot) <= KEPT_PER_BOT + TRIM_SLACK
    trimmed = False
    for _ in range(TRIM_SLACK):
        ids.append(bot.call("getMe").headers["X-Request-Id"])
        trimmed = trimmed or stored_rows(db, bot) == KEPT_PER_BOT
    assert trimmed
    assert [r["request_id"] for r in calls_of(operator, bot)] == ids[-KEPT_PER_BOT:][::-1]
    assert stored_rows(db, other) == 1


def test_records_are_kept_24_hours_of_the_service_clock(clock, app, operator, bot, chat, db):
    bot.ok("getMe")
    bot.ok("getUpdates")                                  # the Start update
    bot.ok("getUpdates", offset=chat.update_id + 1)        # an empty poll, counted
    last_poll = int(clock.now)
    operator("advanceClock", seconds=24 * 3600)
    bot.ok("sendMessage", chat_id=chat.chat_id, text="a day later")
    page = log_page(operator, bot)
    assert [c["method"] for c in page["calls"]] == ["sendMessage", "getUpdates", "getMe"]
    operator("advanceClock", seconds=1)
    page = log_page(operator, bot)
    assert [c["method"] for c in page["calls"]] == ["sendMessage"]
    assert (page["empty_polls"], page["last_poll_at"]) == (1, last_poll)
    run_job(app, "delete_expired_records")
    assert [row[0] for row in db.execute("SELECT method FROM bot_calls")] == ["sendMessage"]
    assert stored_rows(db, bot) == 1


def test_pages_and_filters(operator, bot, chat):
    for i in range(5):
        bot.ok("sendMessage", chat_id=chat.chat_id, text=f"m{i}")
        bot.call("sendMessage", {"chat_id": MISSING_CHAT, "text": f"x{i}"})
        bot.ok("getMe")
    everything = calls_of(operator, bot)
    assert len(everything) == 15
    first = log_page(operator, bot, limit=4)
    assert first["calls"] == everything[:4] and first["next_cursor"]
    second = log_page(operator, bot, limit=4, cursor=first["next_cursor"])
    assert second["calls"] == everything[4:8]
    sends = calls_of(operator, bot, method="sendMessage")
    assert sends == [c for c in everything if c["method"] == "sendMessage"] and len(sends) == 10
    failures = calls_of(operator, bot, failures_only=True)
    assert failures == [c for c in everything if not c["ok"]] and len(failures) == 5
    assert calls_of(operator, bot, method="getMe", failures_only=True) == []
    paged = log_page(operator, bot, method="sendMessage", failures_only=True, limit=2)
    assert [c["params"]["text"] for c in paged["calls"]] == ["x4", "x3"]
    rest = log_page(operator, bot, method="sendMessage", failures_only=True,
                    cursor=paged["next_cursor"])
    assert [c["params"]["text"] for c in rest["calls"]] == ["x2", "x1", "x0"]
    assert rest["next_cursor"] is None


@pytest.mark.parametrize("params, field", [
    ({"method": "sendMesage"}, "method"),
    ({"method": ""}, "method"),
    ({"method": "getBotCalls"}, "method"),          # an operator method, not a /v2 one
    ({"method": 1}, "method"),
    ({"failures_only": "true"}, "failures_only"),
    ({"limit": 0}, "limit"),
    ({"limit": 101}, "limit"),
    ({"cursor": "not-a-cursor"}, "cursor"),
    ({"extra": 1}, "extra"),
])
def test_bad_parameters_are_refused(operator, bot, params, field):
    assert_invalid(operator.call("getBotCalls", bot_id=bot.id, **params), field)


def test_a_cursor_of_another_bot_and_a_bot_that_is_not_are_refused(operator, bot, new_bot):
    other = new_bot()
    for _ in range(3):
        other.ok("getMe")
    cursor = log_page(operator, other, limit=1)["next_cursor"]
    assert_invalid(operator.call("getBotCalls", bot_id=bot.id, cursor=cursor), "cursor")
    assert_invalid(operator.call("getBotCalls", bot_id=9999), "bot_id")
    assert_invalid(operator.call("getBotCalls"), "bot_id")


def test_reset_empties_the_log(app, operator, bot, chat, db):
    bot.ok("getMe")
    bot.ok("getUpdates", offset=chat.update_id + 1)
    log_page(operator, bot)
    writer = app.extensions[EXTENSION]
    bot.ok("getMe")                  # still in this process's buffer at the reset
    operator("reset")
    writer.write_if_free()
    assert db.execute("SELECT count(*) FROM bot_calls").fetchone()[0] == 0
    assert db.execute("SELECT count(*) FROM bot_call_counts").fetchone()[0] == 0
    assert_invalid(operator.call("getBotCalls", bot_id=bot.id), "bot_id")


def test_with_the_call_log_off_nothing_is_recorded(make_app):
    app = make_app(call_log=False)
    assert EXTENSION not in app.extensions
    operator = Operator(app.test_client())
    created = operator("createBot", username="unlogged_bot")
    bot = BotClient(app.test_client(), created["bot"], created["token"])
    bot.ok("getMe")
    bot.ok("getUpdates")
    assert log_page(operator, bot) == {"calls": [], "next_cursor": None, "empty_polls": 0,
                                       "last_poll_at": None}


def test_a_busy_database_never_holds_a_call_back(app, client, bot, operator):
    """The record is written by the background thread once the lock is
    free; the call answered meanwhile. (No timing is asserted: a call that
    waited for the lock held here would never return.) The call is one that
    writes nothing itself (a GET, answered 405), so only its record needs
    the lock."""
    db_path = app.config["SETTINGS"].db_path
    holder = connect(db_path)
    holder.acquire_write_lock()
    holder.execute("BEGIN IMMEDIATE")
    try:
        # buffered: the answer is closed after it is read, as a server closes it once sent
        answered = client.get("/v2/getMe", headers={"Authorization": f"Bearer {bot.token}"},
                              buffered=True)
        assert answered.status_code == 405
        assert _stored_request_ids(db_path) == []
    finally:
        holder.execute("ROLLBACK")
        holder.release_write_lock()
        holder.close()
    deadline = time.monotonic() + 10
    while _stored_request_ids(db_path) == [] and time.monotonic() < deadline:
        time.sleep(0.02)
    assert _stored_request_ids(db_path) == [answered.headers["X-Request-Id"]]


def _stored_request_ids(db_path: str) -> list[str]:
    conn = sqlite3.connect(db_path)
    try:
        return [row[0] for row in conn.execute("SELECT request_id FROM bot_calls")]
    finally:
        conn.close()


def test_a_record_the_database_refuses_is_dropped_and_the_call_answers(app, bot, operator, db,
                                                                        caplog):
    db.execute("ALTER TABLE bot_calls RENAME TO bot_calls_away")
    answered = bot.call("getMe", buffered=True)
    assert answered.status_code == 200
    writer = app.extensions[EXTENSION]
    assert writer.dropped == 1
    assert "call log: 1 records not written (OperationalError)" in caplog.text
    db.execute("ALTER TABLE bot_calls_away RENAME TO bot_calls")
    assert bot.call("getMe", buffered=True).status_code == 200
    assert len(log_page(operator, bot)["calls"]) == 1


def test_the_admin_token_is_in_no_record(app, client, bot, operator):
    bot.ok("getMe")
    log_page(operator, bot)
    database = app.config["SETTINGS"].db_path
    stored = b"".join(open(database + suffix, "rb").read()
                      for suffix in ("", "-wal") if _exists(database + suffix))
    assert ADMIN_TOKEN.encode() not in stored
    assert bot.token.encode() not in stored and bot.token.partition(":")[2].encode() not in stored


def test_a_lone_calls_record_is_written_with_the_calls_own_rows(app, bot, chat, operator,
                                                                  monkeypatch):
    """Calls one after another (as a quiet bot or a test makes them): each
    record goes in the call's own transaction, so the writer never needs one
    of its own, and every record is there when the answer is."""
    writer = app.extensions[EXTENSION]
    taken_by_the_writer = []
    take = writer._take

    def watched_take():
        records, polls = take()
        taken_by_the_writer.extend(records)
        return records, polls
    monkeypatch.setattr(writer, "_take", watched_take)
    sent = bot.call("sendMessage", {"chat_id": chat.chat_id, "text": "hi"})
    missing = bot.call("sendMessage", {"chat_id": MISSING_CHAT, "text": "x"})
    me = bot.call("getMe")
    assert [r.status_code for r in (sent, missing, me)] == [200, 404, 200]
    records = log_page(operator, bot)["calls"]
    assert [r["request_id"] for r in records] == [
        r.headers["X-Request-Id"] for r in (me, missing, sent)]
    assert records[1]["error_code"] == "CHAT_NOT_FOUND"
    assert records[2]["result"] == sent.get_json()["result"]
    assert taken_by_the_writer == []


def test_a_record_whose_call_is_rolled_back_is_made_from_the_final_answer(make_app, tmp_path):
    """A full disk refuses the COMMIT of a getMe (its rate's row and its
    record): the call answers all the same, as a read, and its record, made
    from that answer after all, is dropped and counted, not lost silently."""
    with small_tmpfs(tmp_path, "16m") as mount:
        app = make_app(data_dir=str(mount / "data"), rate_api_per_sec=1000)
        client = app.test_client()
        operator = Operator(client)
        created = operator("createBot", username="diskfull_bot")
        bot = BotClient(client, created["bot"], created["token"])
        writer = app.extensions[EXTENSION]
        with contextlib.closing(connect(app.config["SETTINGS"].db_path)) as conn:
            checkpoint(conn)   # an emptied WAL: the next write needs new blocks
        filler = fill(mount)
        answered = bot.call("getMe")
        assert answered.status_code == 200 and answered.get_json()["result"]["id"] == bot.id
        assert writer.dropped == 1
        filler.unlink()
        again = bot.call("getMe")
        assert [r["request_id"] for r in log_page(operator, bot)["calls"]] == [
            again.headers["X-Request-Id"]]
