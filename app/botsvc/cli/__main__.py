"""``python -m botsvc.cli``: the ``botsvc`` command (the testing kit starts
``serve`` this way, with the interpreter it runs on)."""
from botsvc.cli import main

main()
