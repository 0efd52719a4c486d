"""Nothing from a conversation ever becomes code: a hostile corpus (NUL, the
old place marker, every quote, backslashes, CR/LF, U+2028/9, ``{}``, ``%s``,
lines that look like code) through every field that reaches the export
(the user's texts, caption and file name, the bot's texts, card, button
labels and callback_data, a click's answer) comes out of the transcript and
the pytest module exactly, and the module's syntax tree holds only the
helpers' calls with literal arguments."""
from __future__ import annotations

import ast
import io
import json

import pytest

from botsvc.domain import conversation_check, conversation_pytest
from tests.export.hostile import CORPUS
from tests.support.contract import ADMIN_TOKEN
from tests.support.media_files import image_bytes

pytestmark = pytest.mark.call_log
FILE_NAME = "it's {} %s $(id).png"


@pytest.fixture
def app(make_app):
    return make_app(test_tools=True)


@pytest.fixture
def scanner_settings(offline_scanner) -> dict:
    return offline_scanner


def keyboard(text: str) -> dict:
    return {"inline_keyboard": [[{"text": text[:40] or "x", "callback_data": text[:60] or "x"}]]}


@pytest.fixture
def hostile_chat(bot, operator, new_user, client):
    user = new_user()
    chat_id = operator("userStart", user_id=user, bot_id=bot.id)["chat_id"]
    offset = bot.ok("getUpdates")[-1]["update_id"] + 1
    for text in CORPUS:
        said = operator("userSendMessage", user_id=user, bot_id=bot.id, text=text)
        assert said["text"] == text   # the service keeps it as sent
        offset = bot.ok("getUpdates", offset=offset)[-1]["update_id"] + 1
        sent = bot.ok("sendMessage", chat_id=chat_id, text=text, reply_markup=keyboard(text))
        query = operator("userClickButton", user_id=user, bot_id=bot.id,
                         message_id=sent["message_id"],
                         callback_data=text[:60] or "x")["callback_query_id"]
        offset = bot.ok("getUpdates", offset=offset)[-1]["update_id"] + 1
        bot.ok("editMessageText", chat_id=chat_id, message_id=sent["message_id"], text=text)
        bot.ok("answerCallbackQuery", callback_query_id=query, text=text)
    card = {"type": "info", "title": CORPUS[0], "text": CORPUS[9],
            "fields": [{"label": t[:100] or "x", "value": t} for t in CORPUS[1:12]]}
    bot.ok("sendCard", chat_id=chat_id, card=card)
    response = client.post("/manage/v1/userSendMedia", data={
        "user_id": str(user), "bot_id": str(bot.id), "caption": CORPUS[5],
        "file": (io.BytesIO(image_bytes("PNG")), FILE_NAME)},
        headers={"Authorization": f"Bearer {ADMIN_TOKEN}"})
    assert response.status_code == 200, response.get_json()
    return {"user_id": user, "bot_id": bot.id, "card": card}


def strings_in(value) -> list[str]:
    if isinstance(value, str):
        return [value]
    if isinstance(value, dict):
        return [s for v in value.values() for s in strings_in(v)]
    if isinstance(value, list):
        return [s for v in value for s in strings_in(v)]
    return []


def module_constants(module: str) -> list[str]:
    """Every text in the module's calls, as Python reads it."""
    tree = ast.parse(module)
    test = next(n for n in tree.body if isinstance(n, ast.FunctionDef))
    return [n.value for n in ast.walk(test) if isinstance(n, ast.Constant)
            and isinstance(n.value, str)]


def test_the_transcript_keeps_every_hostile_text_exactly(operator, hostile_chat):
    exported = operator("exportChat", user_id=hostile_chat["user_id"],
                        bot_id=hostile_chat["bot_id"], format="transcript")
    transcript = json.loads(exported["content"])
    assert transcript["complete"] is True, transcript["notes"]
    texts = strings_in(transcript["steps"])
    for text in CORPUS:
        assert texts.count(text) >= 4, text   # said, sent, edited, answered
    card = [r for s in transcript["steps"] for r in s["bot"] if r.get("type") == "card"]
    assert card[0]["card"] == hostile_chat["card"]
    photo = transcript["steps"][-1]["user"]
    assert (photo["caption"], photo["file_name"]) == (CORPUS[5], FILE_NAME)


def test_the_module_holds_only_the_helpers_calls_and_every_text_exactly(operator, hostile_chat):
    module = operator("exportChat", user_id=hostile_chat["user_id"],
                      bot_id=hostile_chat["bot_id"])["content"]
    conversation_check.check_module(module)   # only the helpers' calls, literal arguments
    tree = ast.parse(module)
    calls = [n for n in ast.walk(tree) if isinstance(n, ast.Call)]
    assert {c.func.attr if isinstance(c.func, ast.Attribute) else c.func.id for c in calls} <= {
        *conversation_check.USER_STEPS, "conversation", "bot_message", "user_message"}
    constants = module_constants(module)
    for text in CORPUS:
        assert constants.count(text) >= 4, text
    assert FILE_NAME in constants


@pytest.mark.parametrize("source", [
    "from botsvc.testkit.conversation import conversation\nimport os\n",
    "def test_conversation(bot_under_test, botsvc, botsvc_bot):\n"
    "    user = conversation(botsvc, botsvc_bot, timeout=TIMEOUT)\n"
    "    user.say(__import__('os').system('id'))\n",
    "def test_conversation(bot_under_test, botsvc, botsvc_bot):\n"
    "    user = conversation(botsvc, botsvc_bot, timeout=TIMEOUT)\n"
    "    user.say(f'{1}')\n",
    "def test_conversation(bot_under_test, botsvc, botsvc_bot):\n"
    "    user = conversation(botsvc, botsvc_bot, timeout=TIMEOUT)\n"
    "    user.__class__()\n",
    "PHOTO_1 = 'not base64!'\n",
])
def test_the_check_refuses_anything_but_the_helpers_calls(source):
    with pytest.raises(ValueError):
        conversation_check.check_module(source)


def test_a_place_is_its_own_type_never_a_text():
    with pytest.raises(ValueError):
        conversation_pytest.Place.of({"from": "bot", "index": "1); import os; (1"})
    rendered = conversation_pytest.render({
        "bot": "x_bot", "notes": ["a\nimport os\u2028b"], "steps": [
            {"user": {"action": "start"}, "bot": []},
            {"user": {"action": "say", "text": "\0place:bot_message(1)",
                      "reply_to": {"from": "user", "index": 1}}, "bot": []}]})
    assert "    user.say('\\x00place:bot_message(1)', reply_to=user_message(1))\n" in rendered
    assert "# Note: a\n# import os\n# b\n" in rendered
