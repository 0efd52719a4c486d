"""The call log over HTTP on the real server (scripts/server: gunicorn, 2
workers): the records of calls served by either worker are all there, in the
order the calls were made, and no token is anywhere in the database or the
server log."""
from __future__ import annotations

import re
import time
from pathlib import Path

import pytest
import requests

from botsvc.devkit.servers import running_server
from botsvc.domain.call_log import BODY_MAX_BYTES
from botsvc.jsontext import dumps

pytestmark = pytest.mark.server

MISSING_CHAT = "vc_" + "0" * 40
ACCESS_LINE = re.compile(r" (\d+) INFO botsvc\.access \[([0-9a-f]{32})\] POST /v2/")


def padded_text(fixed: dict, size: int) -> dict:
    """``fixed`` plus a ``text`` that brings its compact JSON to ``size`` bytes."""
    room = size - len(dumps({**fixed, "text": ""}).encode())
    return {**fixed, "text": "é" * (room // 2) + "x" * (room % 2)}


def record_of(answer: requests.Response, method: str, params=None, key=None) -> dict:
    """What the contract asks the record of this answer to hold (call_id,
    date and duration_ms aside)."""
    body = answer.json()
    record = {"method": method, "ok": body["ok"], "http_status": answer.status_code,
              "request_id": answer.headers["X-Request-Id"]}
    if not body["ok"]:
        record.update(error_code=body["error_code"], description=body["description"])
    if key is not None:
        record["idempotency_key"] = key
    record["replayed"] = answer.headers.get("Idempotent-Replayed") == "true"
    if params is not None:
        record["params"] = params
    if body["ok"]:
        record["result"] = body["result"]
    return record


def wait_for_calls(server, bot_id: int, count: int, empty_polls: int) -> tuple[list, dict]:
    """All the bot's records once ``count`` of them and the empty polls are
    written (each worker writes its own just after answering)."""
    deadline = time.monotonic() + 10
    while True:
        found, cursor = [], None
        while True:
            page = server.operator("getBotCalls", bot_id=bot_id, cursor=cursor)
            found += page["calls"]
            cursor = page["next_cursor"]
            if cursor is None:
                break
        if (len(found), page["empty_polls"]) == (count, empty_polls) \
                or time.monotonic() > deadline:
            return found, page
        time.sleep(0.05)


def test_calls_served_by_both_workers_are_all_recorded_in_order(tmp_path):
    with running_server(tmp_path, BOTSVC_ACCESS_LOG=1) as server:
        created = server.operator("createBot", username="across_bot")
        token, bot_id = created["token"], created["bot"]["id"]
        user = server.operator("createUser")["user_id"]
        chat_id = server.operator("userStart", user_id=user, bot_id=bot_id)["chat_id"]
        began = server.operator("getClock")["now"]
        sent: list[dict] = []

        def call(method: str, params: dict, key: str | None = None, *, read=True,
                 truncated=False, counted_only=False) -> requests.Response:
            """Make the call, and note the record it must leave: with its
            params unless the body is not ``read`` or is ``truncated``; none
            for an empty poll (``counted_only``)."""
            # A new connection for every call, so that both workers take turns.
            headers = {"Authorization": f"Bearer {token}", "Connection": "close"}
            if key:
                headers["Idempotency-Key"] = key
            answer = requests.post(f"{server.base_url}/v2/{method}", json=params,
                                   headers=headers, timeout=30)
            if not counted_only:
                record = record_of(answer, method, params if read and not truncated else None,
                                   key)
                sent.append({**record, "truncated": True} if truncated else record)
            return answer

        def workers_so_far() -> set[str]:
            served = dict((request_id, pid) for pid, request_id in ACCESS_LINE.findall(
                server.log_path.read_text(encoding="utf-8", errors="replace")))
            return {served.get(record["request_id"]) for record in sent}

        start_update = call("getUpdates", {}).json()["result"][0]["update_id"]
        turns = 0
        # Which worker accepts a connection is up to the kernel: go on until
        # both have answered some (at least 8 turns).
        while turns < 8 or (len(workers_so_far() - {None}) < 2 and turns < 100):
            call("sendMessage", {"chat_id": chat_id, "text": f"turn {turns}"})
            call("sendMessage", {"chat_id": MISSING_CHAT, "text": f"nowhere {turns}"})
            call("getUpdates", {"offset": start_update + 1}, counted_only=True)
            call("getMe", {})
            turns += 1
        call("sendMessage", {"chat_id": chat_id, "text": "once"}, key="k-1")
        assert call("sendMessage", {"chat_id": chat_id, "text": "once"}, key="k-1"
                    ).headers["Idempotent-Replayed"] == "true"
        call("sendMesage", {"chat_id": chat_id, "text": "typo"}, read=False)   # no such method
        call("sendMessage", padded_text({"chat_id": MISSING_CHAT}, BODY_MAX_BYTES))
        call("sendMessage", padded_text({"chat_id": MISSING_CHAT}, BODY_MAX_BYTES + 1),
             truncated=True)

        records, page = wait_for_calls(server, bot_id, len(sent), turns)
        ended = server.operator("getClock")["now"]
        time.sleep(0.5)                    # let the access lines reach the log
        log = server.log_path.read_bytes()
        data = b"".join(p.read_bytes() for p in Path(server.data_dir).rglob("*") if p.is_file())

    assert page["empty_polls"] == turns and began <= page["last_poll_at"] <= ended
    assert all(began <= r["date"] <= ended for r in records)
    shown = [{k: v for k, v in r.items() if k not in ("call_id", "date", "duration_ms")}
             for r in records]
    assert shown == sent[::-1]
    ids = [r["call_id"] for r in records]
    assert ids == sorted(ids, reverse=True)
    # Both workers answered some of them.
    worker_of = dict((request_id, pid) for pid, request_id in
                     ACCESS_LINE.findall(log.decode("utf-8", "replace")))
    assert len({worker_of[r["request_id"]] for r in records}) == 2
    # No token in the database, its journal or anything else in the data dir,
    # nor in the server's log.
    secret = token.partition(":")[2].encode()
    for where in (data, log):
        assert secret not in where and server.admin_token.encode() not in where
