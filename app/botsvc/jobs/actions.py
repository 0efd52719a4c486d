"""What each listed job does, registered by name where the work lives.

The list (``schedule.py``) names the jobs; the modules that own the work
register an action under each name (``@action(DELIVER_WEBHOOKS)`` in
app/botsvc/webhooks/delivery.py, the clean-ups in app/botsvc/maintenance.py, ...). So the
list, and this package, never import the layers above them, and a job is
still defined in one place. The scheduler refuses to start while a listed
job has no action (``missing``): a module that registers one was not
imported.
"""
from __future__ import annotations

from collections.abc import Callable

# name -> run(conn, settings), called inside an app context (app/botsvc/jobs/runner.py)
_actions: dict[str, Callable] = {}


def action(name: str):
    """Register the decorated ``run(conn, settings)`` as the job ``name``'s work."""
    def register(run: Callable) -> Callable:
        if _actions.get(name, run) is not run:
            raise RuntimeError(f"job {name} has two actions")
        _actions[name] = run
        return run
    return register


def action_for(name: str) -> Callable:
    try:
        return _actions[name]
    except KeyError:
        raise RuntimeError(f"job {name} has no action: the module that registers it "
                           "was not imported") from None


def missing(names) -> list[str]:
    return [name for name in names if name not in _actions]
