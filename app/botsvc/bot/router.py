"""The handlers of a bot and which one an update goes to.

    bot = Bot()          # botsvc.bot.Bot: a Router with its runners

    @bot.command("start")
    def greet(ctx):
        ctx.reply(f"Hello! You came from {ctx.args or 'nowhere'}.")

The first handler registered whose filter matches an update gets it; when
none does, the fallback (if any). A handler is a plain function or an
``async def``; it gets a ``Context``. Its exception is logged with the
update, and the bot goes on (runner.py).
"""
from __future__ import annotations

import asyncio
import inspect
import json
import logging
import re
from collections.abc import Callable
from dataclasses import dataclass
from typing import Any, Literal

from botsvc.bot.context import Context

log = logging.getLogger("botsvc.bot")

Match = dict[str, Any]   # what a filter found: Context keywords (command, args, match)
MEMBERSHIP_EVENTS = ("started", "stopped", "blocked")


@dataclass(frozen=True)
class Handler:
    name: str
    matches: Callable[[dict], Match | None]
    function: Callable

    @property
    def is_async(self) -> bool:
        return inspect.iscoroutinefunction(self.function)


def _command(message: dict | None) -> tuple[str, str | None] | None:
    """("start", "hello") for "/start hello" (and "/start@name hello")."""
    text = (message or {}).get("text") or ""
    if not text.startswith("/") or len(text) == 1:
        return None
    head, _, rest = text[1:].partition(" ")
    return head.split("@", 1)[0], rest.strip() or None


class Router:
    """A bot's handlers and the dispatch of an update to one of them
    (``botsvc.bot.Bot`` adds the two ways of running them)."""

    def __init__(self) -> None:
        self.handlers: list[Handler] = []
        self.fallback_handler: Handler | None = None

    def _register(self, name: str, matches: Callable[[dict], Match | None]):
        def enter(function: Callable) -> Callable:
            self.handlers.append(Handler(name, matches, function))
            return function
        return enter

    def command(self, *names: str):
        """A command: ``/name`` and what follows as ``ctx.args``. For /start,
        ``ctx.args`` is the start parameter."""
        def matches(update: dict) -> Match | None:
            found = _command(update.get("message"))
            if found is None or found[0] not in names:
                return None
            start_parameter = (update.get("membership") or {}).get("start_parameter")
            return {"command": found[0], "args": start_parameter or found[1]}
        return self._register(f"command {'/'.join(names)}", matches)

    def text(self, exact: str | None = None, *, pattern: str | re.Pattern | None = None):
        """A text message: equal to ``exact``, or where ``pattern`` is found
        (``ctx.match``), or, with neither, any text that is not a command."""
        regex = re.compile(pattern) if pattern is not None else None

        def matches(update: dict) -> Match | None:
            text = (update.get("message") or {}).get("text")
            if text is None:
                return None
            if exact is not None:
                return {} if text == exact else None
            if regex is not None:
                found = regex.search(text)
                return {"match": found} if found else None
            return None if _command(update["message"]) else {}
        return self._register(f"text {exact or pattern or '(any)'}", matches)

    def callback(self, data: str | None = None, *, prefix: str | None = None):
        """A button click: its callback_data equal to ``data``, or starting
        with ``prefix`` (the rest in ``ctx.args``), or any click."""
        def matches(update: dict) -> Match | None:
            query = update.get("callback_query")
            if query is None:
                return None
            if data is not None:
                return {} if query["data"] == data else None
            if prefix is not None:
                given = query["data"]
                return {"args": given[len(prefix):]} if given.startswith(prefix) else None
            return {}
        return self._register(f"callback {data or prefix or '(any)'}", matches)

    def membership(self, event: Literal["started", "stopped", "blocked"]):
        """A user started the bot (``ctx.args``: the start parameter),
        stopped it (/stop) or blocked it."""
        if event not in MEMBERSHIP_EVENTS:
            raise ValueError(f"event must be one of {MEMBERSHIP_EVENTS}")

        def matches(update: dict) -> Match | None:
            member = update.get("membership")
            if member is None:
                return None
            happened = ("started" if member["status"] == "active" else
                        "blocked" if member.get("reason") == "blocked" else "stopped")
            return {"args": member.get("start_parameter")} if happened == event else None
        return self._register(f"membership {event}", matches)

    def file(self, *types: str):
        """A message carrying a file (``ctx.file``); with ``types``, only
        messages of those types (photo, video, animation, audio, voice,
        document)."""
        def matches(update: dict) -> Match | None:
            message = update.get("message") or {}
            if "media" not in message or (types and message.get("type") not in types):
                return None
            return {}
        return self._register(f"file {'/'.join(types) or '(any)'}", matches)

    def fallback(self, function: Callable | None = None):
        """What no other handler took (``@bot.fallback`` or ``@bot.fallback()``)."""
        def enter(function: Callable) -> Callable:
            self.fallback_handler = Handler("fallback", lambda update: {}, function)
            return function
        return enter(function) if function is not None else enter

    def route(self, update: dict) -> tuple[Handler, Match] | None:
        for handler in self.handlers:
            found = handler.matches(update)
            if found is not None:
                return handler, found
        if self.fallback_handler is not None:
            return self.fallback_handler, {}
        return None

    async def dispatch(self, update: dict, api: Any, async_api: Any, *,
                       may_block: bool = False) -> None:
        """Run the update's handler to its end: an ``async def`` in this
        loop; a plain one in a worker thread, so that it never holds the
        loop, or here when ``may_block`` (the loop is the caller's alone and
        waits for the handler anyway). An exception is logged with the
        update and goes no further."""
        routed = self.route(update)
        if routed is None:
            return
        handler, found = routed
        try:
            if handler.is_async:
                await handler.function(Context(update, async_api, **found))
            elif may_block:
                handler.function(Context(update, api, **found))
            else:
                await asyncio.to_thread(handler.function, Context(update, api, **found))
        except Exception:
            log.exception("handler %s (%s) failed on update %s", handler.function.__name__,
                          handler.name, json.dumps(update, ensure_ascii=False))
