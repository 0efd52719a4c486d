"""The ``botsvc`` command: the operator API from a shell, and the
installation's own tasks, one module per concern:

- ``base``: the command group and what every command shares (one-line
  failures, migrations, which installation a command acts on);
- ``installation``: migrate, backup, restore, openapi;
- ``serve``: serve and check-media (the media tools, the address);
- ``operator``: one command per operator method, acting on the data dir or,
  with BOTSVC_URL (or ``--url``) and the admin token, on a running server
  through ``/manage/v1`` (``remote``);
- ``transcripts``: run-transcript, transcripts replayed against a bot that
  is its own process, in any language (``junit`` writes its report).

Settings come from the environment, as for the server (BOTSVC_DATA_DIR above
all). ``main`` imports a command's module when the command is looked up
(``base.Commands``), so that ``botsvc serve`` loads only what serving needs.
"""
from botsvc.cli.base import main

__all__ = ["main", "OPERATOR_COMMANDS", "OperatorCommand", "run_operator_method"]
OPERATOR_NAMES = ("OPERATOR_COMMANDS", "OperatorCommand", "run_operator_method")


def __getattr__(name: str):
    if name in OPERATOR_NAMES:
        from botsvc.cli import operator  # the operator commands load the whole app: when asked

        return getattr(operator, name)
    raise AttributeError(f"module {__name__!r} has no attribute {name!r}")
