"""The loop end to end, with real processes: a conversation with a real
example bot on a running botsvc (Start with a parameter, a text, a click
answered with an edit and an answer, a photo from the user, a deletion),
exported as a pytest module, run green by an inner pytest on the plugin
against a fresh installation of its own; then the bot answers differently,
or not at all, and the same module fails naming the step, expected beside
actual."""
from __future__ import annotations

import os
import subprocess
import sys
import threading
from pathlib import Path

import pytest

from botsvc.devkit.servers import running_server
from botsvc.testkit.harness import Botsvc
from tests.export.promo_bot import PromoBot
from tests.support.media_files import image_bytes

HERE = Path(__file__).parent
CONFTEST = f'''import os
import sys
import threading

import pytest

sys.path.insert(0, {str(HERE)!r})
from promo_bot import PromoBot


@pytest.fixture
def bot_under_test(botsvc_bot):
    bot = PromoBot(botsvc_bot.base_url, botsvc_bot.token,
                   echo=os.environ.get("PROMO_ECHO", "You said: {{}}"),
                   clicks=os.environ.get("PROMO_DEAD_BUTTONS") != "1")
    stop = threading.Event()
    thread = threading.Thread(target=bot.run, args=(stop,), daemon=True)
    thread.start()
    yield bot
    stop.set()
    thread.join(timeout=30)
'''


def run_bot(bot) -> tuple[threading.Event, threading.Thread]:
    promo = PromoBot(bot.base_url, bot.token)
    stop = threading.Event()
    thread = threading.Thread(target=promo.run, args=(stop,), daemon=True)
    thread.start()
    return stop, thread


def have_the_conversation(botsvc: Botsvc, tmp_path: Path):
    bot = botsvc.new_bot()
    user = botsvc.new_user(bot)
    stop, thread = run_bot(bot)
    try:
        user.start("promo")
        welcome = user.wait_for_message("Welcome (promo)")
        user.say("hello")
        user.wait_for_message("You said: hello")
        user.click(welcome, "yes")
        botsvc.wait_for_call(bot, "answerCallbackQuery")
        photo = tmp_path / "me.png"
        photo.write_bytes(image_bytes("PNG"))
        user.send_file(photo)
        user.wait_for_message("Nice photo")
        user.say("forget")
        botsvc.wait_for_call(bot, "deleteMessage")
    finally:
        stop.set()
        thread.join(timeout=30)
    return bot, user


def run_inner_pytest(folder: Path, env: dict[str, str]) -> subprocess.CompletedProcess:
    inner_env = {k: v for k, v in os.environ.items()
                 if k not in ("BOTSVC_URL", "BOTSVC_ADMIN_TOKEN", "PYTEST_ADDOPTS")}
    return subprocess.run([sys.executable, "-m", "pytest", "-q", "-p", "no:cacheprovider",
                           "-p", "no:randomly", str(folder)], cwd=folder,
                          env={**inner_env, **env}, capture_output=True, text=True, timeout=300)


@pytest.mark.server
def test_a_conversation_becomes_a_test_that_catches_a_change(tmp_path, offline_signature_db):
    scanner = {"BOTSVC_CLAMAV_DB": offline_signature_db}
    with running_server(tmp_path, BOTSVC_TEST_TOOLS=1, **scanner) as server:
        botsvc = Botsvc(server.base_url, server.admin_token)
        bot, user = have_the_conversation(botsvc, tmp_path)
        exported = botsvc.operator.call("exportChat", user_id=user.user_id, bot_id=bot.id)
    module = exported["content"]
    for line in ("user.start('promo')", "user.say('hello')", "user.click(bot_message(1), 'yes')",
                 "user.expect_answer('Saved')", "user.expect_message('Nice photo')",
                 "user.say('forget')", "user.expect_deleted(bot_message(3))"):
        assert f"    {line}\n" in module, module
    # The edit kept the keyboard: its expectation is wrapped over lines.
    assert "    user.expect_edit(\n        bot_message(1),\n        'You picked yes',\n" in module
    folder = tmp_path / "bot-project"
    folder.mkdir()
    (folder / exported["file_name"]).write_text(module)
    (folder / "conftest.py").write_text(CONFTEST)

    green = run_inner_pytest(folder, scanner)
    assert green.returncode == 0, green.stdout + green.stderr
    assert "1 passed" in green.stdout

    changed = run_inner_pytest(folder, {**scanner, "PROMO_ECHO": "You wrote: {}"})
    assert changed.returncode == 1, changed.stdout + changed.stderr
    for line in ("AssertionError: step 2 (user.say('hello')), reaction 1:",
                 "  expected: the bot sent a message: type='text', text='You said: hello'",
                 "  actual:   the bot sent a message: type='text', text='You wrote: hello'"):
        assert line in changed.stdout, changed.stdout
    # The report shows the test's chat, as a hand-written test's does.
    assert "botsvc: user " in changed.stdout and "'s chat with @" in changed.stdout
    assert ": You wrote: hello\n" in changed.stdout, changed.stdout

    # A reaction that never comes: the buttons do nothing, and TIMEOUT (the
    # one setting at the top of the module) is made short.
    exported_file = folder / exported["file_name"]
    exported_file.write_text(module.replace("\nTIMEOUT = 10 ", "\nTIMEOUT = 1 "))
    silent = run_inner_pytest(folder, {**scanner, "PROMO_DEAD_BUTTONS": "1"})
    assert silent.returncode == 1, silent.stdout + silent.stderr
    for line in ("AssertionError: step 3 (user.click(bot_message(1), 'yes')), reaction 1:",
                 "  expected: the bot edited a message: message=bot_message(1), type='text',"
                 " text='You picked yes'",
                 "  actual:   nothing within 1 s"):
        assert line in silent.stdout, silent.stdout
