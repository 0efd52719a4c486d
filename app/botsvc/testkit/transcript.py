"""A ``botsvc-transcript/1`` file as a test: read and checked (``load``),
then replayed (``replay``) by the same step engine as an exported pytest
module (``conversation.ConversationUser``): the same simulated user, the same
waits, the same comparison and the same failure text, step by step. The
transcript is that module's content as data; ``botsvc run-transcript``
replays it against a bot in any language.
"""
from __future__ import annotations

import json
from typing import Any

from botsvc.testkit.conversation import conversation, run_steps
from botsvc.testkit.harness import DEFAULT_WAIT_SECONDS, Botsvc, TestBot

FORMAT = "botsvc-transcript/1"
ACTIONS = ("start", "stop", "block", "say", "click", "send_file")
REACTIONS = ("message", "edit", "delete", "answer")


class NotATranscript(ValueError):
    """The file is not a botsvc-transcript/1 file: the message says why."""


def load(text: str) -> dict[str, Any]:
    """The transcript in ``text``, checked enough to replay (every step an
    action the engine knows, every reaction one it can expect)."""
    try:
        data = json.loads(text)
    except ValueError as bad:
        raise NotATranscript(f"not JSON ({bad})") from None
    if not isinstance(data, dict) or data.get("format") != FORMAT:
        found = data.get("format") if isinstance(data, dict) else type(data).__name__
        raise NotATranscript(f"its format is {found!r}, not {FORMAT!r}")
    steps = data.get("steps")
    if not isinstance(steps, list):
        raise NotATranscript("it has no list of steps")
    for number, step in enumerate(steps, 1):
        _check_step(number, step)
    return data


def _check_step(number: int, step: Any) -> None:
    user = step.get("user") if isinstance(step, dict) else None
    if not isinstance(user, dict) or user.get("action") not in ACTIONS:
        raise NotATranscript(f"step {number} has no user action of {', '.join(ACTIONS)}")
    reactions = step.get("bot", [])
    if not isinstance(reactions, list) or not all(
            isinstance(r, dict) and r.get("reaction") in REACTIONS for r in reactions):
        raise NotATranscript(f"step {number}'s bot reactions are not a list of"
                             f" {', '.join(REACTIONS)}")


def replay(botsvc: Botsvc, bot: TestBot, transcript: dict[str, Any], *,
           timeout: float = DEFAULT_WAIT_SECONDS) -> None:
    """A new simulated user replays each action and waits for each expected
    reaction in order (a part's lead-in awaited, not compared:
    ``conversation.run_steps``); AssertionError (the engine's text: the step,
    what was expected, what the bot did) on the first that differs or never
    comes."""
    __tracebackhide__ = True   # the failure is the step's, not this loop's
    run_steps(conversation(botsvc, bot, timeout=timeout), transcript["steps"])
