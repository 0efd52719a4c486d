"""What a failing test's report shows besides the traceback: each simulated
user's chat as the user saw it, and each bot's failed calls from its call log
(the plugin adds them as report sections). Read after the failure, from the
server, so they show what really happened; a server that cannot answer any
more is said in one line, never a second error."""
from __future__ import annotations

import json
from typing import TYPE_CHECKING, Any

if TYPE_CHECKING:
    from botsvc.testkit.harness import Botsvc

# A section stays readable: the newest lines, each cut at this width.
MAX_LINES, MAX_WIDTH = 50, 200


def failure_sections(botsvc: Botsvc) -> list[tuple[str, str]]:
    """(title, text) for every user and bot the test made through ``botsvc``."""
    sections = []
    for user in botsvc.made_users:
        title = f"botsvc: user {user.user_id}'s chat with @{user.bot.username}"
        sections.append((title, _read(lambda user=user: _chat_lines(user.chat()))))
    for bot in botsvc.made_bots:
        title = f"botsvc: failed calls of @{bot.username}, oldest first"
        sections.append((title, _read(lambda bot=bot: _call_lines(
            botsvc.calls(bot, failures_only=True)))))
    return sections


def _read(lines) -> str:
    try:
        found = lines()
    except Exception as error:   # the server is gone, or refused: say so, once
        return f"(could not read it: {type(error).__name__}: {error})"
    if not found:
        return "(none)"
    cut = [line if len(line) <= MAX_WIDTH else line[:MAX_WIDTH - 3] + "..." for line in found]
    skipped = len(cut) - MAX_LINES
    return "\n".join(([f"({skipped} older lines left out)"] if skipped > 0 else [])
                     + cut[-MAX_LINES:])


def _chat_lines(chat: dict[str, Any]) -> list[str]:
    lines = [f"(chat {chat['chat_id']}, {chat['status']})"]
    for message in chat["messages"]:
        who = "bot " if message["from_bot"] else "user"
        what = message.get("text") or message.get("caption") or f"[{message['type']}]"
        lines.append(f"{who} #{message['message_id']}: {what}")
    return lines


def _call_lines(records: list[dict[str, Any]]) -> list[str]:
    return [f"{record['method']} -> {record.get('error_code')}: {record.get('description', '')}"
            f" {json.dumps(record.get('params', {}), ensure_ascii=False)}"
            for record in reversed(records)]
