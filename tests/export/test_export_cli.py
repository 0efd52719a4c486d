"""``botsvc export-chat``: exportChat from the command line, the same entry
and schema as /manage/v1."""
from __future__ import annotations

import json

from tests.support.cli import botsvc as run_botsvc


def botsvc(data_dir, *args):
    return run_botsvc(*args, env={"BOTSVC_DATA_DIR": str(data_dir), "BOTSVC_ADMIN_TOKEN": None})


def test_export_chat_prints_the_file_and_refuses_as_the_api_does(tmp_path):
    for command in (("migrate",), ("create-bot", "cli_export_bot"), ("create-user",),
                    ("user-start", "1", "1", "--start-parameter", "promo"),
                    ("user-send", "1", "1", "hello")):
        assert botsvc(tmp_path, *command).returncode == 0
    done = botsvc(tmp_path, "export-chat", "1", "1", "--format", "transcript")
    assert done.returncode == 0, done.stderr
    exported = json.loads(done.stdout)
    assert exported["file_name"] == "test_cli_export_bot_conversation.json"
    assert [s["user"] for s in json.loads(exported["content"])["steps"]] == [
        {"action": "start", "start_parameter": "promo"}, {"action": "say", "text": "hello"}]
    module = json.loads(botsvc(tmp_path, "export-chat", "1", "1", "--after", "1").stdout)
    assert "    user.say('hello')\n" in module["content"]
    refused = botsvc(tmp_path, "export-chat", "1", "1", "--format", "yaml")
    assert refused.returncode == 1 and refused.stdout == ""
    assert json.loads(refused.stderr.strip().splitlines()[-1])["parameters"] == {
        "field": "format"}
