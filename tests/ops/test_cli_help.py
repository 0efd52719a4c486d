"""The ``botsvc`` command's own help: ``--version``, the group's help naming
where a command acts (BOTSVC_DATA_DIR, BOTSVC_URL), and each command's
summary whole, never cut with "..."."""
from __future__ import annotations

from importlib.metadata import version

from click.testing import CliRunner

from botsvc.cli import main


def test_version():
    done = CliRunner().invoke(main, ["--version"])
    assert (done.exit_code, done.output) == (0, f"botsvc {version('botsvc')}\n")


def test_the_group_says_where_a_command_acts_and_cuts_no_summary():
    done = CliRunner().invoke(main, ["--help"], terminal_width=80)
    assert done.exit_code == 0
    help_text = " ".join(done.output.split())
    assert "BOTSVC_DATA_DIR" in help_text and "BOTSVC_URL" in help_text
    commands = done.output.split("\nCommands:\n", 1)[1]
    assert "..." not in commands
    for name in ("run-transcript", "export-chat", "serve", "create-bot"):
        assert f"\n  {name} " in commands, name
    assert "Replay transcripts against a bot process (any language)." in help_text
