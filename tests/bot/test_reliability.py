"""The contract's reliability, built into every call, under the operator's
injected faults on a real botsvc: 5xx retried under one Idempotency-Key,
a 429 waited out, a lost answer replayed rather than sent twice, a 4xx
raised at once, and every failure one BotError."""
from __future__ import annotations

import asyncio
import socket
import time

import pytest

from botsvc.bot import Api, AsyncApi, BotError, RetryPolicy

QUICK = RetryPolicy(backoff_first=0.01, backoff_max=0.05)


@pytest.fixture
def chat_id(botsvc_user) -> str:
    return botsvc_user.start()


def test_two_server_errors_then_one_message_sent_not_two(botsvc, botsvc_bot, botsvc_user,
                                                          chat_id):
    botsvc.inject_fault(botsvc_bot, "sendMessage", error_code="INTERNAL_ERROR", count=2)
    api = Api(botsvc_bot.base_url, botsvc_bot.token, policy=QUICK)
    sent = api.send_message(chat_id=chat_id, text="once")
    assert sent["text"] == "once" and sent["chat"]["id"] == chat_id
    assert [m["text"] for m in botsvc_user.messages_from_bot()] == ["once"]
    calls = [botsvc.wait_for_call(botsvc_bot, "sendMessage") for _ in range(3)]
    assert [c.get("error_code") for c in calls] == ["INTERNAL_ERROR", "INTERNAL_ERROR", None]
    keys = {c["idempotency_key"] for c in calls}
    assert len(keys) == 1 and keys.pop().startswith("sdk-")   # one logical call, one key


def test_a_rate_limit_is_waited_out_for_its_retry_after(botsvc, botsvc_bot, botsvc_user, chat_id):
    botsvc.inject_fault(botsvc_bot, "sendMessage", error_code="RATE_LIMITED", count=1)
    api = Api(botsvc_bot.base_url, botsvc_bot.token)
    began = time.monotonic()
    api.send_message(chat_id=chat_id, text="after the wait")
    assert time.monotonic() - began >= 1.0      # Retry-After: 1, waited in full
    limited, sent = (botsvc.wait_for_call(botsvc_bot, "sendMessage") for _ in range(2))
    assert limited["error_code"] == "RATE_LIMITED" and sent["ok"] is True
    assert [m["text"] for m in botsvc_user.messages_from_bot()] == ["after the wait"]


def test_a_retry_after_beyond_the_bound_is_raised(botsvc, botsvc_bot, chat_id):
    botsvc.inject_fault(botsvc_bot, "sendMessage", error_code="RATE_LIMITED", count=1)
    api = Api(botsvc_bot.base_url, botsvc_bot.token,
              policy=RetryPolicy(retry_after_max=0.5))
    with pytest.raises(BotError) as raised:
        api.send_message(chat_id=chat_id, text="not now")
    error = raised.value
    assert (error.error_code, error.http_status, error.retry_after) == ("RATE_LIMITED", 429, 1)
    assert error.parameters == {"retry_after": 1, "injected": True}


def test_a_4xx_is_raised_at_once_with_the_envelope(botsvc, botsvc_bot, chat_id):
    api = Api(botsvc_bot.base_url, botsvc_bot.token, policy=QUICK)
    with pytest.raises(BotError) as raised:
        api.send_message(chat_id="vc_" + "0" * 40, text="nobody")
    error = raised.value
    assert (error.error_code, error.http_status, error.method) == ("CHAT_NOT_FOUND", 404,
                                                                   "sendMessage")
    assert error.description and error.retry_after is None
    with pytest.raises(BotError) as invalid:
        api.send_message(chat_id=chat_id, text="")
    assert invalid.value.error_code == "INVALID_PARAMETER"
    assert invalid.value.parameters["field"] == "text"
    # Every retry is made before the call returns; the records are written
    # just after the answers, so a moment is enough for them all to be there.
    time.sleep(0.2)
    assert len(botsvc.calls(botsvc_bot, "sendMessage")) == 2


def test_a_lost_answer_is_retried_under_its_key_and_replayed(botsvc, botsvc_bot, botsvc_user,
                                                             chat_id):
    """The first attempt is held past the client's timeout, then runs; the
    retry carries the same key, so the service replays it: one message."""
    botsvc.inject_fault(botsvc_bot, "sendMessage", delay_ms=1500, count=1)
    api = Api(botsvc_bot.base_url, botsvc_bot.token,
              policy=RetryPolicy(timeout=0.5, backoff_first=0.01, backoff_max=0.05))
    sent = api.send_message(chat_id=chat_id, text="exactly once")
    assert [m["message_id"] for m in botsvc_user.messages_from_bot()] == [sent["message_id"]]


def test_no_answer_at_all_is_retried_then_raised(botsvc_bot):
    with socket.socket() as closed:
        closed.bind(("127.0.0.1", 0))
        port = closed.getsockname()[1]
    api = Api(f"http://127.0.0.1:{port}", botsvc_bot.token,
              policy=RetryPolicy(attempts=3, backoff_first=0.01, backoff_max=0.02))
    with pytest.raises(BotError) as raised:
        api.get_me()
    assert (raised.value.error_code, raised.value.http_status) == ("NETWORK_ERROR", None)


@pytest.mark.parametrize("use_httpx", [True, False], ids=["httpx", "threads"])
def test_the_async_api_retries_the_same_way(botsvc, botsvc_bot, botsvc_user, chat_id, use_httpx):
    botsvc.inject_fault(botsvc_bot, "sendMessage", error_code="INTERNAL_ERROR", count=2)

    async def send():
        api = AsyncApi(botsvc_bot.base_url, botsvc_bot.token, policy=QUICK, use_httpx=use_httpx)
        try:
            return await api.send_message(chat_id=chat_id, text="async once")
        finally:
            await api.aclose()

    assert asyncio.run(send())["text"] == "async once"
    assert [m["text"] for m in botsvc_user.messages_from_bot()] == ["async once"]
    keys = {botsvc.wait_for_call(botsvc_bot, "sendMessage")["idempotency_key"] for _ in range(3)}
    assert len(keys) == 1
