"""SIGKILL the real server (master and workers) in the middle of a broadcast,
start it again, and prove every member got exactly one message and the
counts are right."""
import random
import sqlite3
import time

import pytest
import requests

from botsvc.devkit.members import add_members
from botsvc.devkit.servers import suite_server

MEMBERS = 2000


def broadcast_progress(db_path: str) -> tuple[int, int]:
    """(sent, total) of the only broadcast, read straight from the database."""
    db = sqlite3.connect(f"file:{db_path}?mode=ro", uri=True, timeout=5)
    try:
        row = db.execute("SELECT sent, total FROM broadcasts").fetchone()
        return (row[0], row[1]) if row else (0, 0)
    finally:
        db.close()


@pytest.mark.server
def test_sigkill_mid_delivery_neither_loses_nor_duplicates_a_recipient(tmp_path):
    server = suite_server(tmp_path / "data").start()
    try:
        created = requests.post(f"{server.base_url}/manage/v1/createBot",
                                json={"username": "crashbot"}, headers=server.admin_headers,
                                timeout=10).json()["result"]
        bot_id, token = created["bot"]["id"], created["token"]
        headers = {"Authorization": f"Bearer {token}"}
        chat_ids = add_members(server.db_path, bot_id, MEMBERS)

        response = requests.post(f"{server.base_url}/v2/createBroadcast", headers=headers,
                                 json={"method": "sendMessage", "payload": {"text": "once"}},
                                 timeout=10).json()
        broadcast_id = response["result"]["broadcast_id"]
        assert response["result"]["counts"]["queued"] == MEMBERS

        # Three crashes at random depths, each followed by a restart that
        # recovers and carries on; then a last run that finishes the job.
        crash_points = []
        for low, high in ((1, 400), (600, 1000), (1200, 1600)):
            threshold = random.randint(low, high)
            deadline = time.monotonic() + 30
            while broadcast_progress(server.db_path)[0] < threshold:
                assert time.monotonic() < deadline, "delivery did not move"
                time.sleep(0.001)
            server.crash()
            sent_at_crash, total = broadcast_progress(server.db_path)
            assert 0 < sent_at_crash < total == MEMBERS, "the kill must land mid-delivery"
            crash_points.append(sent_at_crash)
            if len(crash_points) < 3:
                server.start()
        print(f"killed with {crash_points} of {MEMBERS} sent")

        server.start()
        deadline = time.monotonic() + 60
        while True:
            result = requests.post(f"{server.base_url}/v2/getBroadcast", headers=headers,
                                   json={"broadcast_id": broadcast_id}, timeout=10).json()
            if result["result"]["status"] == "completed":
                break
            assert time.monotonic() < deadline, result
            time.sleep(0.1)
        assert result["result"]["counts"] == {"queued": 0, "sent": MEMBERS, "failed": 0,
                                              "cancelled": 0}

        db = sqlite3.connect(server.db_path)
        per_chat = dict(db.execute(
            "SELECT c.chat_id, COUNT(m.message_id) FROM chats c LEFT JOIN messages m"
            " ON m.chat_ref = c.id AND m.from_bot = 1 WHERE c.bot_id = ? GROUP BY c.id",
            (bot_id,)).fetchall())
        assert per_chat == {chat_id: 1 for chat_id in chat_ids}
        # Each recipient's message_id is the one message its chat received.
        mismatched = db.execute(
            "SELECT COUNT(*) FROM broadcast_recipients r JOIN messages m"
            " ON m.chat_ref = r.chat_ref AND m.from_bot = 1"
            " WHERE r.status != 'sent' OR r.message_id != m.message_id").fetchone()[0]
        assert mismatched == 0
        db.close()

        # And as the users see it, for a few of them.
        for user_id in (1, MEMBERS // 2, MEMBERS):
            view = requests.post(f"{server.base_url}/manage/v1/userGetChat",
                                 headers=server.admin_headers,
                                 json={"user_id": user_id, "bot_id": bot_id}, timeout=10)
            texts = [m["text"] for m in view.json()["result"]["messages"] if m["from_bot"]]
            assert texts == ["once"]
    finally:
        server.kill()
