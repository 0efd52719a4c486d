"""The harness for a test that runs its bot in its own event loop (an asyncio
bot under pytest-asyncio or anyio): the same methods as ``Botsvc`` and
``SimulatedUser``, awaited. Each runs the blocking one in a worker thread
(``asyncio.to_thread``), so while a test awaits ``wait_for_message`` the
loop keeps running the bot that is to answer it; a blocking wait there would
hold the loop, and the bot, until its timeout."""
from __future__ import annotations

import asyncio
import os
from collections.abc import Callable
from typing import Any

from botsvc.testkit.client import Clock
from botsvc.testkit.harness import DEFAULT_WAIT_SECONDS, Botsvc, SimulatedUser, TestBot


class AsyncUser:
    """A simulated user, awaited: ``await user.say("hi")``."""

    def __init__(self, user: SimulatedUser):
        self.sync = user
        self.user_id, self.bot = user.user_id, user.bot

    async def start(self, start_parameter: str | None = None) -> str:
        return await asyncio.to_thread(self.sync.start, start_parameter)

    async def stop(self) -> None:
        await asyncio.to_thread(self.sync.stop)

    async def block(self) -> None:
        await asyncio.to_thread(self.sync.block)

    async def say(self, text: str, reply_to_message_id: int | None = None) -> dict[str, Any]:
        return await asyncio.to_thread(self.sync.say, text, reply_to_message_id)

    async def click(self, message: dict[str, Any] | int, callback_data: str) -> str:
        return await asyncio.to_thread(self.sync.click, message, callback_data)

    async def send_file(self, path: str | os.PathLike, caption: str | None = None,
                        type: str | None = None) -> dict[str, Any]:
        return await asyncio.to_thread(self.sync.send_file, path, caption, type)

    async def chat(self) -> dict[str, Any]:
        return await asyncio.to_thread(self.sync.chat)

    async def recent(self, after_message_id: int = 0) -> list[dict[str, Any]]:
        return await asyncio.to_thread(self.sync.recent, after_message_id)

    async def messages_from_bot(self) -> list[dict[str, Any]]:
        return await asyncio.to_thread(self.sync.messages_from_bot)

    async def wait_for_message(self, match: str | Callable[[dict], bool] | None = None, *,
                               timeout: float = DEFAULT_WAIT_SECONDS) -> dict[str, Any]:
        __tracebackhide__ = True   # a timeout points at the test's line, not here
        return await asyncio.to_thread(self.sync.wait_for_message, match, timeout=timeout)


class AsyncBotsvc:
    """The installation, awaited: ``await botsvc.wait_for_call(bot, "sendMessage")``."""

    def __init__(self, botsvc: Botsvc):
        self.sync = botsvc
        self.base_url, self.operator = botsvc.base_url, botsvc.operator

    async def new_bot(self, username: str | None = None,
                      display_name: str | None = None) -> TestBot:
        return await asyncio.to_thread(self.sync.new_bot, username, display_name)

    async def new_user(self, bot: TestBot, display_name: str | None = None) -> AsyncUser:
        return AsyncUser(await asyncio.to_thread(self.sync.new_user, bot, display_name))

    async def advance_clock(self, seconds: int) -> Clock:
        return await asyncio.to_thread(self.sync.advance_clock, seconds)

    async def inject_fault(self, bot: TestBot | int, method: str, error_code: str | None = None,
                           delay_ms: int | None = None, count: int | None = None) -> None:
        await asyncio.to_thread(self.sync.inject_fault, bot, method, error_code, delay_ms, count)

    async def clear_faults(self, bot: TestBot | int) -> None:
        await asyncio.to_thread(self.sync.clear_faults, bot)

    async def calls(self, bot: TestBot | int, method: str | None = None,
                    failures_only: bool = False) -> list[dict[str, Any]]:
        return await asyncio.to_thread(self.sync.calls, bot, method, failures_only)

    async def wait_for_call(self, bot: TestBot | int, method: str | None = None,
                            match: Callable[[dict], bool] | None = None, *,
                            timeout: float = DEFAULT_WAIT_SECONDS) -> dict[str, Any]:
        __tracebackhide__ = True   # a timeout points at the test's line, not here
        return await asyncio.to_thread(self.sync.wait_for_call, bot, method, match,
                                       timeout=timeout)

    async def reset(self) -> None:
        await asyncio.to_thread(self.sync.reset)
