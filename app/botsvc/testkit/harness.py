"""What the plugin's fixtures hand a test: the installation (``Botsvc``), a
bot under test (``TestBot``) and simulated users (``SimulatedUser``)."""
from __future__ import annotations

import itertools
import os
import secrets
from collections.abc import Callable
from typing import Any

from botsvc.contract import USER_CHAT_MAX_LIMIT
from botsvc.testkit.client import BotApi, Clock, OperatorClient
from botsvc.testkit.waits import waited

DEFAULT_WAIT_SECONDS = 10.0
# The waits do not poll: each read waits on the server (userGetChat's and
# getBotCalls' wait_ms) and is answered as soon as the bot's message or call
# is written (testkit.waits.waited; docs/testing-tools.md#waiting-without-polling).
# While the bot under test is a process, a read waits at most this long, so
# that a bot that exited fails the wait soon rather than at its timeout.
PROCESS_CHECK_SECONDS = 0.25
_names = itertools.count(1)


class TestBot:
    """A bot created for one test: give ``token`` and ``base_url`` to the bot
    under test; ``api`` is this test's own handle on its /v2 API."""

    __test__ = False   # not a test class, whatever pytest thinks of its name

    def __init__(self, bot: dict[str, Any], token: str, base_url: str):
        self.bot = bot
        self.id: int = bot["id"]
        self.username: str = bot["username"]
        self.token = token
        self.base_url = base_url          # the service; methods are {base_url}/v2/<method>
        self.api = BotApi(base_url, token)
        # Set while the bot under test runs as a process (bot_under_test with
        # botsvc_bot_command): raises once that process has exited.
        self.process_check: Callable[[], None] | None = None
        # Set while the bot under test is an SDK bot polling in this process
        # (botsvc_bot_object): told each time a user acts, so that it polls
        # at once rather than at the end of its pause.
        self.update_sent: Callable[[], None] | None = None

    def check_running(self) -> None:
        """An AssertionError, with its exit status and last lines, if the bot
        under test was a process and has exited: the waits call it, so a bot
        that died fails the step at once rather than at the timeout."""
        __tracebackhide__ = True   # the failure points at the test's line
        if self.process_check is not None:
            self.process_check()

    def read_seconds(self) -> float | None:
        """How long one of the waits' reads may wait on the server: bounded
        while a bot process is watched, so that its exit is seen soon."""
        return PROCESS_CHECK_SECONDS if self.process_check is not None else None

    def __repr__(self) -> str:
        return f"TestBot(id={self.id}, username={self.username!r})"


class SimulatedUser:
    """A messenger user talking to one bot through the operator API."""

    # Messages per userGetChat page: its largest, the fewest calls for a chat.
    page_limit = USER_CHAT_MAX_LIMIT

    def __init__(self, operator: OperatorClient, bot: TestBot, user_id: int):
        self.operator, self.bot, self.user_id = operator, bot, user_id
        self._seen = 0   # the last bot message_id wait_for_message returned

    def start(self, start_parameter: str | None = None) -> str:
        """Press Start; returns the chat_id (as the bot will see it)."""
        return self._acted(self.operator.user_start(self.user_id, self.bot.id,
                                                    start_parameter))["chat_id"]

    def stop(self) -> None:
        self._acted(self.operator.user_stop(self.user_id, self.bot.id))

    def block(self) -> None:
        self._acted(self.operator.user_block(self.user_id, self.bot.id))

    def say(self, text: str, reply_to_message_id: int | None = None) -> dict[str, Any]:
        """Send a text message to the bot; returns the Message."""
        return self._acted(self.operator.user_send_message(self.user_id, self.bot.id, text,
                                                           reply_to_message_id))

    def click(self, message: dict[str, Any] | int, callback_data: str) -> str:
        """Click the callback button with ``callback_data`` on one of the
        bot's messages (a Message or its message_id); returns the query id."""
        message_id = message if isinstance(message, int) else message["message_id"]
        return self._acted(self.operator.user_click_button(self.user_id, self.bot.id,
                                                           message_id, callback_data))

    def send_file(self, path: str | os.PathLike, caption: str | None = None,
                  type: str | None = None) -> dict[str, Any]:
        """Send a photo, video, audio or document (scanned and converted as
        an upload is); returns the Message."""
        return self._acted(self.operator.user_send_media(self.user_id, self.bot.id, path,
                                                         caption, type))

    def _acted(self, answer):
        """What an action answered, once the bot under test is told of it."""
        if self.bot.update_sent is not None:
            self.bot.update_sent()
        return answer

    def chat(self) -> dict[str, Any]:
        """The whole chat as the user sees it now: ``{chat_id, status,
        messages, callback_answers}``, edits and deletions applied, oldest
        message first. Reads every page of userGetChat; ``recent()`` reads
        only the newest."""
        pages = list(self.operator.user_chat_pages(self.user_id, self.bot.id,
                                                   limit=self.page_limit))
        newest = pages[0]
        return {"chat_id": newest["chat_id"], "status": newest["status"],
                "messages": [m for page in reversed(pages) for m in page["messages"]],
                # Each page lists its answers in the order given; across
                # pages, by date (a stable sort keeps a page's order).
                "callback_answers": sorted(
                    (a for page in reversed(pages) for a in page["callback_answers"]),
                    key=lambda answer: answer["date"])}

    def recent(self, after_message_id: int = 0) -> list[dict[str, Any]]:
        """The messages the user sees whose message_id is above
        ``after_message_id``, oldest first: only the pages that hold them are
        read, so a long chat costs no more than a short one."""
        found: list[dict[str, Any]] = []
        for page in self.operator.user_chat_pages(self.user_id, self.bot.id,
                                                  limit=self.page_limit):
            newer = [m for m in page["messages"] if m["message_id"] > after_message_id]
            found[:0] = newer
            if len(newer) < len(page["messages"]):
                break
        return found

    def messages_from_bot(self) -> list[dict[str, Any]]:
        return [m for m in self.chat()["messages"] if m["from_bot"]]

    def wait_for_message(self, match: str | Callable[[dict], bool] | None = None, *,
                         timeout: float = DEFAULT_WAIT_SECONDS) -> dict[str, Any]:
        """The next message the bot sends this user (after the last one this
        method returned) whose text or caption equals ``match``, or for which
        ``match(message)`` is true; AssertionError after ``timeout`` seconds."""
        __tracebackhide__ = True   # a timeout points at the test's line, not here
        def wanted(message: dict) -> bool:
            if match is None:
                return True
            if callable(match):
                return bool(match(message))
            return match in (message.get("text"), message.get("caption"))

        newest = self._seen   # the newest bot message read: the next read waits past it
        arrived: list[dict[str, Any]] = []

        def read(wait_ms: int) -> dict[str, Any]:
            return self.operator.user_get_chat(self.user_id, self.bot.id, self.page_limit,
                                               wait_ms=wait_ms, wait_after_message_id=newest)

        def fresh(page: dict[str, Any]) -> bool:
            return any(m["message_id"] > newest and m["from_bot"] for m in page["messages"])

        for page in waited(read, fresh, timeout, self.bot.read_seconds()):
            messages = page["messages"]
            if page["has_more"] and messages and messages[0]["message_id"] > self._seen:
                messages = self.recent(self._seen)   # more new ones than a page holds
            arrived = [m for m in messages if m["from_bot"] and m["message_id"] > self._seen]
            for message in arrived:
                if wanted(message):
                    self._seen = message["message_id"]
                    return message
            self.bot.check_running()
            newest = max([newest, *(m["message_id"] for m in arrived)])
        got = [m.get("text", m.get("caption", m["type"])) for m in arrived]
        raise AssertionError(f"the bot sent no matching message within {timeout:g} s"
                             f" (new messages: {got!r})")


class Botsvc:
    """The installation under test: bots, users and the testing tools."""

    def __init__(self, base_url: str, admin_token: str):
        self.base_url = base_url
        self.admin_token = admin_token
        self.operator = OperatorClient(base_url, admin_token)
        self._calls_seen: dict[int, int] = {}   # bot_id: the last call_id wait_for_call returned
        # What the current test made (the plugin empties them before each
        # test): a failing test's report shows their chats and failed calls.
        self.made_bots: list[TestBot] = []
        self.made_users: list[SimulatedUser] = []

    def new_bot(self, username: str | None = None, display_name: str | None = None) -> TestBot:
        username = username or f"t{next(_names)}_{secrets.token_hex(4)}_bot"
        created = self.operator.create_bot(username, display_name)
        self.made_bots.append(TestBot(created.bot, created.token, self.base_url))
        return self.made_bots[-1]

    def new_user(self, bot: TestBot, display_name: str | None = None) -> SimulatedUser:
        user = SimulatedUser(self.operator, bot, self.operator.create_user(display_name))
        self.made_users.append(user)
        return user

    def clock(self) -> Clock:
        return self.operator.get_clock()

    def advance_clock(self, seconds: int) -> Clock:
        """Move the service's clock ahead: retries, expiries and clean-ups
        that became due run at once."""
        return self.operator.advance_clock(seconds)

    def inject_fault(self, bot: TestBot | int, method: str, error_code: str | None = None,
                     delay_ms: int | None = None, count: int | None = None) -> None:
        """The bot's next ``count`` calls of ``method`` are held ``delay_ms``
        and then answered with ``error_code`` (or executed normally)."""
        self.operator.inject_fault(_bot_id(bot), method, error_code, delay_ms, count)

    def clear_faults(self, bot: TestBot | int) -> None:
        self.operator.clear_faults(_bot_id(bot))

    def webhook_deliveries(self, bot: TestBot | int) -> list[dict[str, Any]]:
        """Every webhook delivery attempt to the bot, newest first."""
        return list(self.operator.webhook_deliveries(_bot_id(bot)))

    def calls(self, bot: TestBot | int, method: str | None = None,
              failures_only: bool = False) -> list[dict[str, Any]]:
        """What the bot did: its /v2 calls (the newest 1,000 of the last 24
        hours), newest first, each with its method, parameters, result or
        error_code and description; only those of ``method``, or only the
        failed ones, when asked. A call's record is written just after its
        answer went out: right after the bot's call returns, it may take a
        moment to appear."""
        return list(self.operator.bot_calls(_bot_id(bot), method=method,
                                            failures_only=failures_only or None))

    def wait_for_call(self, bot: TestBot | int, method: str | None = None,
                      match: Callable[[dict], bool] | None = None, *,
                      timeout: float = DEFAULT_WAIT_SECONDS) -> dict[str, Any]:
        """The bot's next call (after the last one this method returned for
        the bot) of ``method``, or for which ``match(record)`` is true, once
        its record is there; AssertionError after ``timeout`` seconds."""
        __tracebackhide__ = True   # a timeout points at the test's line, not here
        bot_id = _bot_id(bot)
        arrived: list[dict[str, Any]] = []   # the calls after the last one returned
        seen = self._calls_seen.get(bot_id, 0)

        def read(wait_ms: int) -> list[dict[str, Any]]:
            after = arrived[-1]["call_id"] if arrived else seen
            return self.operator.calls_after(bot_id, after, method, wait_ms=wait_ms)

        watched = bot.read_seconds() if isinstance(bot, TestBot) else None
        for fresh in waited(read, bool, timeout, watched):
            arrived += fresh
            for record in fresh:   # the oldest first
                if match is None or match(record):
                    self._calls_seen[bot_id] = record["call_id"]
                    return record
            if isinstance(bot, TestBot):
                bot.check_running()
        got = [(c["method"], c.get("error_code", "ok")) for c in arrived]
        raise AssertionError(f"the bot made no matching call within {timeout:g} s"
                             f" (new calls: {got!r})")

    def reset(self) -> None:
        """The installation empty again (bots, users, files, the clock...)."""
        self.operator.reset()


def _bot_id(bot: TestBot | int) -> int:
    return bot if isinstance(bot, int) else bot.id
