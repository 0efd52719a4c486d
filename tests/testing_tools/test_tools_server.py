"""The testing tools over real HTTP against scripts/server (gunicorn, 2
workers, each with its scheduler): one clock for every process, a retry due
in minutes sent within a second of advanceClock, signed links expiring,
exactly N injected failures whichever worker serves, reset during a running
broadcast."""
from __future__ import annotations

import threading
import time
from concurrent.futures import ThreadPoolExecutor

import pytest
import requests

from botsvc.devkit.receivers import Receiver
from botsvc.devkit.servers import running_server
from botsvc.testkit.client import BotApi, BotsvcError, OperatorClient

pytestmark = pytest.mark.server
SECRET = "server-test-secret-token"


@pytest.fixture(scope="module")
def server(tmp_path_factory):
    with running_server(tmp_path_factory.mktemp("tools"), BOTSVC_TEST_TOOLS=1,
                        BOTSVC_WEBHOOK_ALLOW_PRIVATE=1, BOTSVC_RATE_SENDS_PER_SEC=40) as server:
        yield server


@pytest.fixture
def operator(server):
    client = OperatorClient(server.base_url, server.admin_token)
    client.reset()
    return client


def new_bot(operator, name="tools_bot"):
    created = operator.create_bot(name)
    return created.id, BotApi(operator.base_url, created.token)


def started_chat(operator, bot_id):
    user = operator.create_user()
    return user, operator.user_start(user, bot_id)["chat_id"]


def wait_until(condition, timeout=30.0, interval=0.02):
    deadline = time.monotonic() + timeout
    while True:
        value = condition()
        if value:
            return value
        assert time.monotonic() < deadline, "condition not met in time"
        time.sleep(interval)


def test_one_clock_for_every_worker(operator):
    bot_id, bot = new_bot(operator)
    _, chat_id = started_chat(operator, bot_id)
    assert operator.advance_clock(86400).offset == 86400

    def send(i):   # one connection per call, eight at a time: both workers serve
        return BotApi(bot.base_url, bot.token).send_message(chat_id, f"m{i}")["date"]

    with ThreadPoolExecutor(8) as pool:
        dates = list(pool.map(send, range(24)))   # within the send rate's burst
    expected = time.time() + 86400
    assert all(abs(date - expected) <= 5 for date in dates), dates


def test_the_offset_survives_a_restart_until_reset(server, operator):
    operator.advance_clock(7200)
    server.restart()
    assert operator.get_clock().offset == 7200
    operator.reset()
    assert operator.get_clock().offset == 0


@pytest.mark.alone
def test_a_retry_due_in_minutes_goes_out_within_a_second_of_advance_clock(operator):
    answers = {"status": 500}

    def respond(handler):
        handler.send_response(answers["status"])
        handler.send_header("Content-Length", "0")
        handler.end_headers()

    receiver = Receiver(None, respond)
    try:
        bot_id, bot = new_bot(operator)
        bot.set_webhook(f"http://127.0.0.1:{receiver.port}/hook", SECRET)
        started_chat(operator, bot_id)

        def attempts():
            return len(list(operator.webhook_deliveries(bot_id)))

        wait_until(lambda: attempts() == 1)
        for failures in range(1, 9):        # each retry brought forward by the clock
            operator.advance_clock(600)
            wait_until(lambda failures=failures: attempts() == failures + 1)
        # Nine failures: the next retry is 205 to 256 s away.
        time.sleep(1.5)
        assert attempts() == 9 and len(receiver.requests) == 9
        answers["status"] = 200
        before = time.monotonic()
        operator.advance_clock(300)
        wait_until(lambda: len(receiver.requests) == 10, timeout=10, interval=0.005)
        assert receiver.requests[-1]["at"] - before < 1.0
        latest = wait_until(lambda: [d for d in operator.webhook_deliveries(bot_id)
                                     if d.get("http_status") == 200])
        assert latest[0]["attempt"] == 10
        assert bot.get_webhook_info()["pending_update_count"] == 0
    finally:
        receiver.close()


def test_a_signed_url_expires_after_advancing_3601_seconds(operator, tmp_path):
    bot_id, bot = new_bot(operator)
    notes = tmp_path / "notes.txt"
    notes.write_bytes(b"a plain text document\n")
    file = bot.upload_file(notes)
    link = bot.get_file(file["file_id"])
    assert requests.get(link["download_url"], timeout=30).content == notes.read_bytes()
    operator.advance_clock(3590)
    assert requests.get(link["download_url"], timeout=30).status_code == 200
    operator.advance_clock(11)
    expired = requests.get(link["download_url"], timeout=30)
    assert expired.status_code == 401 and expired.json()["error_code"] == "UNAUTHORIZED"
    assert "expired" in expired.json()["description"]
    assert bot.get_file(file["file_id"])["expires_at"] >= operator.get_clock().now + 3599


def test_exactly_count_injected_failures_whichever_worker_serves(operator):
    bot_id, bot = new_bot(operator)
    token = bot.token
    operator.inject_fault(bot_id, "getMe", error_code="INTERNAL_ERROR", count=10)

    def call(_):
        response = requests.post(f"{bot.base_url}/v2/getMe", json={}, timeout=30,
                                 headers={"Authorization": f"Bearer {token}"})
        return response.status_code, response.json().get("parameters", {}).get("injected")

    with ThreadPoolExecutor(8) as pool:
        outcomes = list(pool.map(call, range(64)))
    assert outcomes.count((500, True)) == 10
    assert outcomes.count((200, None)) == 54


@pytest.mark.alone
def test_a_held_call_holds_nothing_else(operator):
    bot_id, bot = new_bot(operator)
    _, chat_id = started_chat(operator, bot_id)
    operator.inject_fault(bot_id, "getMe", delay_ms=2000)
    finished = []
    held = threading.Thread(target=lambda: finished.append(("getMe", bot.get_me())))
    held.start()
    time.sleep(0.2)
    for i in range(5):   # the same bot writes meanwhile: no lock is held
        bot.send_message(chat_id, f"meanwhile {i}")
        finished.append(("sendMessage", i))
    held.join()
    assert [name for name, _ in finished] == ["sendMessage"] * 5 + ["getMe"]


def test_reset_during_a_running_broadcast(server, operator):
    log_start = server.log_path.stat().st_size
    bot_id, bot = new_bot(operator)
    members = [started_chat(operator, bot_id)[1] for _ in range(200)]
    broadcast = bot.call("createBroadcast", method="sendMessage", payload={"text": "to all"})
    wait_until(lambda: bot.call("getBroadcast", broadcast_id=broadcast["broadcast_id"])
               ["status"] == "running")
    answers: list[int] = []
    stop = threading.Event()

    def keep_sending():   # the bot's own calls go on across the reset
        while not stop.is_set():
            try:
                bot.send_message(members[0], "still here?")
                answers.append(200)
            except BotsvcError as error:
                answers.append(error.http_status)

    senders = [threading.Thread(target=keep_sending) for _ in range(3)]
    for sender in senders:
        sender.start()
    time.sleep(0.3)
    counts = bot.call("getBroadcast", broadcast_id=broadcast["broadcast_id"])["counts"]
    assert counts["sent"] > 0 and counts["queued"] > 0     # mid-way
    operator.reset()
    time.sleep(0.5)
    stop.set()
    for sender in senders:
        sender.join()

    assert operator.list_bots() == [] and 200 in answers
    # Never a 5xx, nor a chat that is half there: the bot's token is gone (401)
    # for a call that authenticated just before the reset and wrote after it.
    assert set(answers) <= {200, 401, 429}, set(answers)
    with pytest.raises(BotsvcError) as gone:
        bot.get_me()
    assert gone.value.error_code == "UNAUTHORIZED"
    # The deliverers go on with new work, and none of them crashed on the old.
    again_id, again = new_bot(operator, "again_bot")
    started_chat(operator, again_id)
    fresh = again.call("createBroadcast", method="sendMessage", payload={"text": "hi"})
    wait_until(lambda: again.call("getBroadcast", broadcast_id=fresh["broadcast_id"])
               ["status"] == "completed")
    with open(server.log_path, "rb") as fh:
        fh.seek(log_start)
        log = fh.read().decode(errors="replace")
    assert "Traceback" not in log and "ERROR" not in log, log
