"""Polling: getUpdates in a loop, each update handed to its handler, in
order, one at a time.

At least once: an update's offset is acknowledged (sent as the next
getUpdates' ``offset``) only after its handler returned. A process that
dies in a handler gets that update again at its next start; so does one
whose last acknowledgement did not reach the service. Handlers should
therefore be safe to run twice for one update (``ctx.update_id`` is a good
Idempotency-Key seed).

A stop (SIGTERM, SIGINT, ``stop()``) lets the handler in hand finish,
acknowledges what was handled, leaves the rest of the batch to come again,
and returns. getUpdates is short polling only, so the loop paces itself:
after a poll that brought updates it polls again at once; after an empty
one it waits ``Pause.first``, each further empty poll ``Pause.growth``
times longer, up to ``Pause.longest`` (about 1 s). Whoever knows an update
is on its way (the pytest plugin, when its simulated user acts) calls
``nudge()``: the loop polls at once and paces from ``Pause.first`` again.
"""
from __future__ import annotations

import asyncio
import logging
import signal
import threading
from collections.abc import Iterator
from dataclasses import dataclass
from typing import Any, ClassVar

from botsvc.bot.api import Api, AsyncApi
from botsvc.bot.errors import BotError
from botsvc.bot.router import Router
from botsvc.bot.transport import RetryPolicy

log = logging.getLogger("botsvc.bot")


@dataclass(frozen=True)
class Pause:
    """The waits between empty polls, in seconds."""
    first: float = 0.05
    growth: float = 2.0
    longest: float = 1.0

    def waits(self) -> Iterator[float]:
        pause = self.first
        while True:
            yield pause
            pause = min(pause * self.growth, self.longest)


class Polling:
    """One bot's polling loop: ``run()`` in an event loop,
    ``run_until_signal()`` as a process's main, ``start_in_thread()`` beside
    other work (a test suite)."""

    # The pause of a loop given none. The pytest plugin tightens it to its own
    # pace for its session (a test must not wait on an idle bot's second).
    default_pause: ClassVar[Pause] = Pause()

    def __init__(self, bot: Router, base_url: str, token: str, *, pause: Pause | None = None,
                 policy: RetryPolicy | None = None, limit: int = 100,
                 use_httpx: bool | None = None):
        self.bot, self.pause, self.limit = bot, pause or self.default_pause, limit
        self.api = Api(base_url, token, policy=policy)
        self.async_api = AsyncApi(base_url, token, policy=policy, use_httpx=use_httpx)
        self.offset = 0         # every update below it was handled
        self.acknowledged = 0   # the offset the service was last given
        self.failure: BaseException | None = None   # what ended a threaded run
        # Whether the loop is this runner's alone (run_until_signal,
        # start_in_thread): then nothing else runs in it while it polls or a
        # handler runs, so getUpdates (requests) and a plain handler run in
        # its thread, sparing a thread hop each; in a loop of yours
        # (``await run()``) they go to worker threads and never hold it.
        self.owns_loop = False
        self._stop_requested = False
        self._nudged = False
        self._wake: asyncio.Event | None = None   # ends a pause: a stop or a nudge
        self._loop: asyncio.AbstractEventLoop | None = None

    async def run(self) -> None:
        self._wake = asyncio.Event()
        self._loop = asyncio.get_running_loop()
        if self._stop_requested:
            self._wake.set()
        try:
            waits = self.pause.waits()
            while not self._stop_requested:
                self._nudged = False   # a nudge from here on may come after this poll's answer
                self._wake.clear()
                updates = await self._poll()
                await self._handle(updates)
                if updates or self._nudged:
                    waits = self.pause.waits()   # busy, or an update on its way: poll at once
                    continue
                await self._sleep(next(waits))
                if self._nudged:
                    waits = self.pause.waits()
        finally:
            await self._acknowledge()
            await self.async_api.aclose()
            self.api.close()

    def stop(self) -> None:
        """Stop after the handler in hand (from any thread or a signal). The
        flag is what the loop reads, so it holds at once, even while a plain
        handler or getUpdates runs in the loop's own thread; the event only
        cuts a pause short."""
        self._stop_requested = True
        self._wake_up()

    def nudge(self) -> None:
        """An update is on its way (from any thread): end the pause in hand
        and pace from ``Pause.first`` again. A nudge while getUpdates runs
        makes the next pause none, since its answer may have missed it."""
        self._nudged = True
        self._wake_up()

    def _wake_up(self) -> None:
        loop, event = self._loop, self._wake
        if loop is not None and event is not None and not loop.is_closed():
            loop.call_soon_threadsafe(event.set)

    async def _poll(self) -> list[dict[str, Any]]:
        try:
            if self.owns_loop:
                updates = self.api.get_updates(offset=self.offset, limit=self.limit)
            else:
                updates = await self.async_api.get_updates(offset=self.offset, limit=self.limit)
        except BotError as error:
            if not error.is_retryable:
                raise   # UNAUTHORIZED, WEBHOOK_ACTIVE, BOT_DISABLED: polling cannot go on
            log.warning("getUpdates failed after its retries (%s); polling again", error)
            return []
        self.acknowledged = self.offset
        return updates

    async def _handle(self, updates: list[dict[str, Any]]) -> None:
        for update in updates:
            if self._stop_requested:
                return   # not handled, not acknowledged: the next run gets them
            await self.bot.dispatch(update, self.api, self.async_api, may_block=self.owns_loop)
            self.offset = update["update_id"] + 1

    async def _acknowledge(self) -> None:
        """Tell the service what was handled since the last poll."""
        if self.offset <= self.acknowledged:
            return
        try:
            await self.async_api.get_updates(offset=self.offset, limit=1)
            self.acknowledged = self.offset
        except BotError as error:
            log.warning("could not acknowledge updates below %d (%s): they will come again",
                        self.offset, error)

    async def _sleep(self, seconds: float) -> None:
        if self._stop_requested:
            return
        try:
            await asyncio.wait_for(self._wake.wait(), seconds)
        except TimeoutError:
            pass

    def run_until_signal(self) -> None:
        """Poll until SIGTERM or SIGINT, then stop gracefully."""
        self.owns_loop = True
        asyncio.run(self._run_with_signals())

    async def _run_with_signals(self) -> None:
        # signal.signal, not the loop's add_signal_handler: a Python signal
        # handler runs at once in the main thread, even inside a plain
        # handler running there, so no update after it is begun.
        previous = {signum: signal.signal(signum, lambda *_: self.stop())
                    for signum in (signal.SIGTERM, signal.SIGINT)}
        try:
            await self.run()
        finally:
            for signum, handler in previous.items():
                signal.signal(signum, handler)

    def start_in_thread(self) -> threading.Thread:
        """Poll in a daemon thread of its own; ``stop()`` then ``join()`` it.
        What ended it early, if anything, is in ``failure``."""
        self.owns_loop = True

        def main() -> None:
            try:
                asyncio.run(self.run())
            except BaseException as exc:   # kept for the caller: a thread's error is lost
                self.failure = exc
                log.exception("polling stopped")
        thread = threading.Thread(target=main, name="botsvc-bot-polling", daemon=True)
        thread.start()
        return thread
