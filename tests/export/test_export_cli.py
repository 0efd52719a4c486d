"""``botsvc export-chat``: exportChat from the command line, the same entry
and schema as /manage/v1; the file written where --output says (its
suggested name by default, ``-`` for stdout)."""
from __future__ import annotations

import json

from tests.support.cli import botsvc as run_botsvc


def botsvc(data_dir, *args):
    return run_botsvc(*args, env={"BOTSVC_DATA_DIR": str(data_dir), "BOTSVC_ADMIN_TOKEN": None})


def test_export_chat_writes_the_file_and_refuses_as_the_api_does(tmp_path, monkeypatch):
    data = tmp_path / "data"
    for command in (("migrate",), ("create-bot", "cli_export_bot"), ("create-user",),
                    ("user-start", "1", "1", "--start-parameter", "promo"),
                    ("user-send", "1", "1", "hello")):
        assert botsvc(data, *command).returncode == 0
    done = botsvc(data, "export-chat", "1", "1", "--format", "transcript", "--output", "-")
    assert done.returncode == 0, done.stderr
    assert [s["user"] for s in json.loads(done.stdout)["steps"]] == [
        {"action": "start", "start_parameter": "promo"}, {"action": "say", "text": "hello"}]

    work = tmp_path / "work"
    work.mkdir()
    monkeypatch.chdir(work)
    written = botsvc(data, "export-chat", "1", "1")
    assert written.returncode == 0 and written.stdout == "", written.stderr
    module = (work / "test_cli_export_bot_conversation.py").read_text()
    assert "    user.start('promo')\n    user.expect_message" not in module   # no reaction
    assert "    user.say('hello')\n" in module
    assert "botsvc: wrote test_cli_export_bot_conversation.py" in written.stderr
    chosen = botsvc(data, "export-chat", "1", "1", "--after", "1", "--format", "transcript",
                    "-o", str(tmp_path / "part.json"))
    assert chosen.returncode == 0, chosen.stderr
    assert json.loads((tmp_path / "part.json").read_text())["format"] == "botsvc-transcript/1"

    refused = botsvc(data, "export-chat", "1", "1", "--format", "yaml")
    assert refused.returncode == 1 and refused.stdout == ""
    assert json.loads(refused.stderr.strip().splitlines()[-1])["parameters"] == {
        "field": "format"}


def test_export_chat_help_names_each_option_and_the_formats(tmp_path):
    shown = botsvc(tmp_path, "export-chat", "--help")
    assert shown.returncode == 0
    text = " ".join(shown.stdout.split())
    for part in ("--after", "only what came after this message", "--format",
                 "one of pytest, transcript", "--output", "- for stdout"):
        assert part in text, shown.stdout
