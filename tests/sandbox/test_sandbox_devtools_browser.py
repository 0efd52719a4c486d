"""The walk's instrument fixes and the DevTools gaps, in a real browser
(Debian's headless Chromium, Selenium) against the real service with the
testing tools on: one browser session, one server.

"Chat with it" on the Bots list opens that bot's chat. A small photo keeps
its time stamp below it; a toast keeps off the header's buttons, on the chat
and on the bot's page. A click the bot answered still says so once its card
is deleted and the page is opened again. On the bot's page: a row dated
before the service clock moved carries no clock mark, one after it the
offset it was dated with; an injected fault says what was injected ("held
700 ms"); the webhook URL shows without the token or its query's values.
Edit and resend sends the changed parameters as the bot (a refusal shown
with its field, nothing sent); Save the list downloads the filtered records
exactly as getBotCalls gives them.
"""
from __future__ import annotations

import io
import json
import time

import pytest
import requests
from PIL import Image
from selenium.webdriver.common.by import By

from botsvc.devkit.servers import running_server
from tests.sandbox import test_sandbox_browser as walk
from tests.sandbox.test_sandbox_browser import SLOW_DEADLINE, Bot, shown, sign_in, wait_for
from tests.sandbox.test_sandbox_instrument_browser import click_js, operator

pytestmark = [pytest.mark.server, pytest.mark.browser]
browser = walk.browser   # the same headless Chromium
KEYBOARD = {"inline_keyboard": [[{"text": "Go", "callback_data": "go"}]]}


class Devtools:
    """What the steps share: the browser, the server, the bot and its chat."""

    def __init__(self, browser, server, downloads):
        self.browser, self.server, self.base, self.downloads = (
            browser, server, server.base_url, downloads)
        created = operator(server, "createBot", username="tools_bot", display_name="Tools")
        self.token, self.bot_id = created["token"], created["bot"]["id"]
        self.bot = Bot(self.base, self.token)
        self.user_id = operator(server, "createUser", display_name="Ada")["user_id"]
        self.chat_id = operator(server, "userStart", user_id=self.user_id,
                                bot_id=self.bot_id)["chat_id"]

    def newest_call(self) -> int:
        return operator(self.server, "getBotCalls", bot_id=self.bot_id,
                        limit=1)["calls"][0]["call_id"]


def test_the_walks_fixes_and_the_devtools(browser, tmp_path):
    downloads = tmp_path / "downloads"
    downloads.mkdir()
    browser.execute_cdp_cmd("Browser.setDownloadBehavior",
                            {"behavior": "allow", "downloadPath": str(downloads)})
    with running_server(tmp_path, BOTSVC_TEST_TOOLS=1, BOTSVC_WEBHOOK_ALLOW_PRIVATE=1) as server:
        tools = Devtools(browser, server, downloads)
        tools.bot.next_update("message")                    # the /start
        chat_with_it_from_the_bots_list_opens_its_chat(tools)
        a_small_photo_keeps_its_stamp_below_and_toasts_keep_off_the_buttons(tools)
        before_move = an_answered_click_says_so_once_its_card_is_deleted(tools)
        the_clock_mark_follows_when_each_row_was_dated(tools, before_move)
        an_injected_fault_and_the_webhook_url_say_what_they_should(tools)
        edit_and_resend_sends_the_changed_parameters_as_the_bot(tools)
        save_the_list_downloads_the_filtered_records(tools)


def chat_with_it_from_the_bots_list_opens_its_chat(tools: Devtools) -> None:
    browser, base = tools.browser, tools.base
    browser.get(f"{base}/sandbox/bots")
    sign_in(browser, base, tools.server.admin_token)
    wait_for(browser, lambda d: d.current_url == f"{base}/sandbox/bots", SLOW_DEADLINE,
             "the Bots list after sign-in")
    click_js(browser, f"#bot-{tools.bot_id} .chat-with-it")
    wait_for(browser, lambda d: d.current_url == f"{base}/sandbox/chats/{tools.user_id}/"
             f"{tools.bot_id}", SLOW_DEADLINE, "the bot's own chat")


def png(width: int, height: int) -> bytes:
    buf = io.BytesIO()
    Image.new("RGB", (width, height), "#e0604a").save(buf, "PNG")
    return buf.getvalue()


def overlap(driver, one, other) -> bool:
    return driver.execute_script(
        "const a = arguments[0].getBoundingClientRect(), b = arguments[1].getBoundingClientRect();"
        "return a.left < b.right && b.left < a.right && a.top < b.bottom && b.top < a.bottom;",
        one, other)


def a_small_photo_keeps_its_stamp_below_and_toasts_keep_off_the_buttons(tools: Devtools) -> None:
    browser = tools.browser
    sent = requests.post(f"{tools.base}/v2/sendPhoto",
                         headers={"Authorization": f"Bearer {tools.token}"},
                         data={"chat_id": tools.chat_id},
                         files={"photo": ("dot.png", io.BytesIO(png(48, 48)), "image/png")},
                         timeout=60).json()["result"]
    bubble, _ = shown(browser, f"#msg-{sent['message_id']} .bubble.small-media", SLOW_DEADLINE)
    image = bubble.find_element(By.CSS_SELECTOR, "img.photo")
    wait_for(browser, lambda d: d.execute_script("return arguments[0].complete", image),
             SLOW_DEADLINE, "the photo loaded")
    stamp = bubble.find_element(By.CSS_SELECTOR, ".meta")
    assert stamp.is_displayed() and not overlap(browser, image, stamp)
    browser.execute_script("Sandbox.toast('A toast over the chat\\'s header?')")
    toast, _ = shown(browser, ".toast", SLOW_DEADLINE)
    for button in ("#btn-stop", "#btn-block", "#btn-export", "#dev-toggle"):
        assert not overlap(browser, toast, browser.find_element(By.CSS_SELECTOR, button)), button


def an_answered_click_says_so_once_its_card_is_deleted(tools: Devtools) -> int:
    """Reopened 60 s later by the service clock. The newest call_id before
    the clock moved."""
    browser, server, bot = tools.browser, tools.server, tools.bot
    card = bot.call("sendMessage", chat_id=tools.chat_id, text="Pick", reply_markup=KEYBOARD)
    clicked = operator(server, "userClickButton", user_id=tools.user_id, bot_id=tools.bot_id,
                       message_id=card["message_id"], callback_data="go")
    bot.call("answerCallbackQuery", callback_query_id=clicked["callback_query_id"],
             text="Noted")
    bot.call("deleteMessage", chat_id=tools.chat_id, message_id=card["message_id"])
    before_move = tools.newest_call()
    operator(server, "advanceClock", seconds=60)
    browser.refresh()
    line, _ = shown(browser, ".line-click .line-status", SLOW_DEADLINE)
    assert line.text == "The bot answered: Noted"
    assert not browser.find_elements(By.CSS_SELECTOR, ".line-click[data-status='silent']")
    return before_move


def clock_marks(driver) -> dict[int, str]:
    return driver.execute_script(
        "const marks = {}; for (const li of document.querySelectorAll('#feed > li.call')) {"
        " const pill = li.querySelector('.clock-ahead');"
        " marks[li.dataset.callId] = pill ? pill.textContent : ''; } return marks;")


def the_clock_mark_follows_when_each_row_was_dated(tools: Devtools, before_move: int) -> None:
    """Rows before the move: no mark; after it, +1 min; after +1 h from the
    page (its toast off the header's buttons), +1 h."""
    browser = tools.browser
    tools.bot.call("getMe")
    after_move = tools.newest_call()
    browser.get(f"{tools.base}/sandbox/bots/{tools.bot_id}")
    wait_for(browser, lambda d: str(after_move) in clock_marks(d), SLOW_DEADLINE, "the rows")
    click_js(browser, "#tools [data-advance='3600']")
    toast, _ = shown(browser, ".toast", SLOW_DEADLINE)
    for button in ("#chat-with-it", ".bot-page .actions a"):
        assert not overlap(browser, toast, browser.find_element(By.CSS_SELECTOR, button)), button
    wait_for(browser, lambda d: "(3660 s ahead" in d.find_element(By.ID, "clock-offset").text,
             SLOW_DEADLINE, "the clock moved")
    tools.bot.call("getMe")
    newest = tools.newest_call()
    wait_for(browser, lambda d: str(newest) in clock_marks(d), SLOW_DEADLINE, "the newest row")
    marks = {int(k): v for k, v in clock_marks(browser).items()}
    assert all(marks[c] == "" for c in marks if c <= before_move), marks
    assert all(marks[c] == "clock +1 min" for c in marks if before_move < c < newest), marks
    assert marks[after_move] == "clock +1 min" and marks[newest] == "clock +1 h"


def an_injected_fault_and_the_webhook_url_say_what_they_should(tools: Devtools) -> None:
    browser, bot = tools.browser, tools.bot
    operator(tools.server, "injectFault", bot_id=tools.bot_id, method="getMe",
             error_code="RATE_LIMITED", delay_ms=700)
    assert requests.post(f"{tools.base}/v2/getMe", timeout=30, headers={
        "Authorization": f"Bearer {tools.token}"}).status_code == 429
    failed = tools.newest_call()
    pill, _ = shown(browser, f"#feed li.call[data-call-id='{failed}'] .pill.injected",
                    SLOW_DEADLINE)
    assert pill.text == "injected: RATE_LIMITED, held 700 ms"
    bot.call("setWebhook", url=f"http://127.0.0.1:9/hook/{tools.token}?key=s3cret&v=2",
             secret_token="a-secret-token-of-16")
    wait_for(browser, lambda d: d.find_element(By.ID, "vital-webhook").text
             == "http://127.0.0.1:9/hook/[token]?key=[redacted]&v=[redacted]",
             SLOW_DEADLINE, "the webhook URL, redacted")
    bot.call("deleteWebhook")


def edit_and_resend_sends_the_changed_parameters_as_the_bot(tools: Devtools) -> None:
    browser, server = tools.browser, tools.server
    tools.bot.call("sendMessage", chat_id=tools.chat_id, text="edit me")
    original = tools.newest_call()
    row = f"#feed li.call[data-call-id='{original}']"
    click_js(browser, f"{row} .call-edit")
    field, _ = shown(browser, f"{row} .call-editor-params", SLOW_DEADLINE)
    assert json.loads(field.get_attribute("value")) == {"chat_id": tools.chat_id,
                                                        "text": "edit me"}

    def send(text: str) -> None:
        browser.execute_script("arguments[0].value = arguments[1];", field, text)
        click_js(browser, f"{row} .call-editor-send")

    send(json.dumps({"chat_id": tools.chat_id}))
    error, _ = shown(browser, f"{row} .call-editor-error:not([hidden])", SLOW_DEADLINE)
    assert error.text == "The edited parameters are not a valid sendMessage: text: is required"
    send("{not json")
    wait_for(browser, lambda d: error.text.startswith("Not JSON: "), SLOW_DEADLINE, "not JSON")
    assert tools.newest_call() == original                     # nothing was sent
    hostile = '<img src=x onerror=alert(1)> "edited"\n'
    send(json.dumps({"chat_id": tools.chat_id, "text": hostile}))
    shown(browser, f"{row} .call-editor-outcome:not([hidden])", SLOW_DEADLINE)
    resent = operator(server, "getBotCalls", bot_id=tools.bot_id, limit=1)["calls"][0]
    assert resent["call_id"] > original and resent["params"]["text"] == hostile
    mark, _ = shown(browser, f"#feed li.call[data-call-id='{resent['call_id']}'] .resent-pill",
                    SLOW_DEADLINE)
    assert mark.text == f"re-send of call {original}"   # marked as Re-send's calls are
    texts = [m.get("text") for m in operator(server, "userGetChat", user_id=tools.user_id,
                                             bot_id=tools.bot_id)["messages"]]
    assert texts[-1] == hostile
    assert not browser.find_elements(By.CSS_SELECTOR, "#feed img")   # text, never markup


def save_the_list_downloads_the_filtered_records(tools: Devtools) -> None:
    browser = tools.browser
    browser.execute_script("const m = document.getElementById('feed-method');"
                           " m.value = 'sendMessage';"
                           " m.dispatchEvent(new Event('change', {bubbles: true}));")
    wait_for(browser, lambda d: "method=sendMessage" in d.find_element(
        By.ID, "feed-save").get_attribute("href"), SLOW_DEADLINE, "the filters in the link")
    click_js(browser, "#feed-save")
    deadline = time.monotonic() + SLOW_DEADLINE
    while not list(tools.downloads.glob("botsvc-calls-tools_bot-*.json")):
        assert time.monotonic() < deadline, list(tools.downloads.iterdir())
        time.sleep(0.1)
    [file] = tools.downloads.glob("botsvc-calls-tools_bot-*.json")
    saved = json.loads(file.read_text())
    expected = operator(tools.server, "getBotCalls", bot_id=tools.bot_id, method="sendMessage",
                        detail=True, limit=100)
    assert saved["getBotCalls"] == {"bot_id": tools.bot_id, "method": "sendMessage",
                                    "detail": True}
    assert saved["calls"] == expected["calls"] and len(saved["calls"]) == 3
