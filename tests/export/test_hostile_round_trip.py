"""The export's promises end to end, with real processes: a conversation
with a real bot holding the hostile corpus in every field, the contract's
longest message with the largest keyboard, a redelivered update and a
re-sent call, exported whole and from a chosen message; each module runs
green on the plugin against a fresh installation of its own with the
unchanged bot, keeping every text exactly, and nothing a chat said runs."""
from __future__ import annotations

import json
import threading
from pathlib import Path

import pytest

from botsvc.devkit.servers import running_server
from botsvc.testkit.harness import Botsvc
from botsvc.testkit.transcript import replay
from tests.export.hostile import CORPUS
from tests.export.hostile_bot import LONG_TEXT, HostileBot
from tests.export.test_round_trip import run_inner_pytest
from tests.support.media_files import image_bytes

HERE = Path(__file__).parent
CONFTEST = f'''import sys
import threading

import pytest

sys.path.insert(0, {str(HERE.parent.parent)!r})
from tests.export.hostile_bot import HostileBot


@pytest.fixture
def bot_under_test(botsvc_bot):
    bot = HostileBot(botsvc_bot.base_url, botsvc_bot.token)
    stop = threading.Event()
    thread = threading.Thread(target=bot.run, args=(stop,), daemon=True)
    thread.start()
    yield bot
    stop.set()
    thread.join(timeout=30)
'''


def talk(botsvc: Botsvc, tmp_path: Path):
    bot = botsvc.new_bot()
    user = botsvc.new_user(bot)
    hostile, stop = HostileBot(bot.base_url, bot.token), threading.Event()
    thread = threading.Thread(target=hostile.run, args=(stop,), daemon=True)
    thread.start()
    try:
        user.start()
        user.wait_for_message(lambda m: m["type"] == "card")
        marks = {}
        for n, text in enumerate(CORPUS):
            said = user.say(text)
            echo = user.wait_for_message(text)
            marks.setdefault("first_echo", echo["message_id"])
            if n == 2:   # a replay of the user's text, and a re-send of the bot's answer
                botsvc.operator.call("redeliverUpdate", bot_id=bot.id,
                                     update_id=_update_of(botsvc, bot, said["message_id"]))
                user.wait_for_message(text)
                sent = botsvc.wait_for_call(bot, "sendMessage",
                                            lambda c, text=text: c.get("params", {}).get("text") == text)
                botsvc.operator.call("resendCall", bot_id=bot.id, call_id=sent["call_id"])
                user.wait_for_message(text)
            user.click(echo, text[:60] or "x")
            botsvc.wait_for_call(bot, "answerCallbackQuery")
        user.say("long")
        user.wait_for_message(LONG_TEXT)
        photo = tmp_path / "me.png"
        photo.write_bytes(image_bytes("PNG"))
        user.send_file(photo, caption=CORPUS[5])
        user.wait_for_message(CORPUS[5])
    finally:
        stop.set()
        thread.join(timeout=30)
    return bot, user, marks


def replay_with_a_fresh_bot(botsvc: Botsvc, transcript: dict) -> None:
    bot = botsvc.new_bot()
    hostile, stop = HostileBot(bot.base_url, bot.token), threading.Event()
    thread = threading.Thread(target=hostile.run, args=(stop,), daemon=True)
    thread.start()
    try:
        replay(botsvc, bot, transcript, timeout=10)
    finally:
        stop.set()
        thread.join(timeout=30)


def _update_of(botsvc: Botsvc, bot, message_id: int) -> int:
    for call in botsvc.calls(bot, "getUpdates"):
        for update in call.get("result") or []:
            if (update.get("message") or {}).get("message_id") == message_id:
                return update["update_id"]
    raise AssertionError(f"no update of message {message_id}")


@pytest.mark.server
def test_hostile_long_and_replayed_conversations_export_green(tmp_path, offline_signature_db):
    scanner = {"BOTSVC_CLAMAV_DB": offline_signature_db}
    with running_server(tmp_path, BOTSVC_TEST_TOOLS=1, **scanner) as server:
        botsvc = Botsvc(server.base_url, server.admin_token)
        bot, user, marks = talk(botsvc, tmp_path)
        whole = botsvc.operator.call("exportChat", user_id=user.user_id, bot_id=bot.id)
        part = botsvc.operator.call("exportChat", user_id=user.user_id, bot_id=bot.id,
                                    after_message_id=marks["first_echo"] + 4)
        data = json.loads(botsvc.operator.call("exportChat", user_id=user.user_id,
                                               bot_id=bot.id, format="transcript")["content"])
        part_data = json.loads(botsvc.operator.call(
            "exportChat", user_id=user.user_id, bot_id=bot.id, format="transcript",
            after_message_id=marks["first_echo"] + 4)["content"])
        assert [s.get("lead_in", False) for s in part_data["steps"]][:2] == [True, True]
        # The same steps from data, as a tool replays a transcript.
        for transcript in (data, part_data):
            replay_with_a_fresh_bot(botsvc, transcript)
        # A step the service refuses fails naming the step, not as a client error.
        click = next(n for n, s in enumerate(data["steps"]) if s["user"]["action"] == "click")
        data["steps"][click]["user"]["callback_data"] = "no such button"
        with pytest.raises(AssertionError, match=rf"^step {click + 1} \(user.click\(bot_message"
                                                 r"\(\d+\), 'no such button'\)\): the service"
                                                 r" refused it: INVALID_PARAMETER: "):
            replay_with_a_fresh_bot(botsvc, data)
    assert data["complete"] is True, data["notes"]
    echoes = [r.get("text") for s in data["steps"] for r in s["bot"] if r["reaction"] == "message"]
    # Each text echoed once: the replay's and the re-send's answers are left out.
    # (the last, the photo's caption)
    assert echoes == [None, *CORPUS, LONG_TEXT, CORPUS[5]]
    for name, exported in (("whole", whole), ("part", part)):
        folder = tmp_path / name
        folder.mkdir()
        (folder / exported["file_name"]).write_text(exported["content"])
        (folder / "conftest.py").write_text(CONFTEST)
        run = run_inner_pytest(folder, scanner)
        assert run.returncode == 0, run.stdout + run.stderr
        assert "1 passed" in run.stdout
        assert not (folder / "pwned").exists() and not Path("pwned").exists()
