"""The ``botsvc`` command: the operator API from a shell, and the
installation's own tasks, one module per concern:

- ``base``: the command group and what every command shares (one-line
  failures, migrations, which installation a command acts on);
- ``installation``: migrate, backup, restore, openapi;
- ``serve``: serve and check-media (the media tools, the address);
- ``operator``: one command per operator method, acting on the data dir or,
  with BOTSVC_URL (or ``--url``) and the admin token, on a running server
  through ``/manage/v1`` (``remote``).

Settings come from the environment, as for the server (BOTSVC_DATA_DIR above
all). Importing this package registers every command on ``main``.
"""
from botsvc.cli import installation, operator, serve  # noqa: F401 (registers the commands)
from botsvc.cli.base import main
from botsvc.cli.operator import OPERATOR_COMMANDS, OperatorCommand, run_operator_method

__all__ = ["main", "OPERATOR_COMMANDS", "OperatorCommand", "run_operator_method"]
