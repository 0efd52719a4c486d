"""The ini key ``botsvc_bot_object`` names an object the plugin imports:
found from the ini file's folder, and refused, saying why, when it is not a
bot made with botsvc.bot."""
from __future__ import annotations

import sys

import pytest

from botsvc.bot import Bot, Pause, Polling
from botsvc.testkit.sdk_bot import SUITE_PACE, load, poll_at_the_suites_pace


@pytest.fixture
def folder(tmp_path, monkeypatch):
    (tmp_path / "shop_bot.py").write_text(
        "import os\nfrom botsvc.bot import Bot\n\nclass Holder:\n    bot = Bot()\n\n"
        "bot = Holder.bot\n")
    monkeypatch.setattr(sys, "path", list(sys.path))
    yield tmp_path
    sys.modules.pop("shop_bot", None)


def test_the_named_object_is_loaded_from_the_ini_files_folder(folder):
    assert isinstance(load("shop_bot:bot", folder), Bot)
    assert load("shop_bot:Holder.bot", folder) is load("shop_bot:bot", folder)
    assert str(folder) in sys.path


def test_an_object_that_is_not_a_bot_is_refused_by_name(folder):
    with pytest.raises(TypeError, match=r"^botsvc_bot_object = shop_bot:os names module, not a "
                                        r"bot made with botsvc.bot.Bot$"):
        load("shop_bot:os", folder)


def test_under_the_plugin_a_loop_without_a_pause_polls_at_its_pace(monkeypatch):
    monkeypatch.setattr(Polling, "default_pause", Pause())
    assert Bot().polling("http://127.0.0.1:1", "token").pause == Pause(0.05, 2.0, 1.0)
    poll_at_the_suites_pace()
    assert Bot().polling("http://127.0.0.1:1", "token").pause == SUITE_PACE
    mine = Pause(first=0.5)
    assert Bot().polling("http://127.0.0.1:1", "token", pause=mine).pause is mine
