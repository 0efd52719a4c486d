"""The sandbox in a real browser: Debian's headless Chromium, driven by
Selenium, against the real service (scripts/server: gunicorn, 2 workers, the
testing tools on). One browser session for every step, to keep CI short.

A person signs in, creates a bot (reading its token from the page, as a
developer would) and a user, reads the bot's description and presses Start;
the test's bot, over /v2 with that token, sends a text with a keyboard, a
card, a photo and a voice note, clicks are answered, messages are edited and
deleted, and the page keeps up within 2 s each time. Hostile text stays
text. The inspector shows, for a user's message and for a click, the update
exactly as getUpdates returned it; a click the bot never answers spins until
the service clock, advanced from the page, passes 15 s, then says the bot did
not respond; Stop, then Block, then Restart each show as a line; another
chat's unread count comes live; a new user opens with the same bot. At
390 px nothing scrolls sideways and long button labels ellipsize.
Screenshots are saved under test-artifacts/ (and docs/sandbox.png when
BOTSVC_DOCS_SCREENSHOT=1), and the browser's console must stay free of errors.
"""
from __future__ import annotations

import io
import json
import os
import re
import time

import pytest
import requests
from PIL import Image, ImageDraw
from selenium import webdriver
from selenium.common.exceptions import NoAlertPresentException, StaleElementReferenceException
from selenium.webdriver.chrome.options import Options
from selenium.webdriver.chrome.service import Service
from selenium.webdriver.common.by import By
from selenium.webdriver.common.keys import Keys
from selenium.webdriver.support.ui import Select, WebDriverWait

from botsvc.devkit.paths import REPO
from botsvc.devkit.servers import running_server
from tests.support.media_files import Samples

pytestmark = [pytest.mark.server, pytest.mark.browser]

ARTIFACTS = REPO / "test-artifacts"
DOCS_PICTURE = REPO / "docs" / "sandbox.png"   # made when BOTSVC_DOCS_SCREENSHOT=1
CHROMIUM_FLAGS = ["--headless", "--no-sandbox", "--disable-gpu", "--disable-dev-shm-usage",
                  "--no-first-run", "--disable-background-networking",
                  "--disable-component-update", "--disable-sync", "--window-size=1280,1000"]
SHOWN_WITHIN = 2.0       # seconds: the bar for a bot's message to appear
SLOW_DEADLINE = 15.0     # for what is not timed (page loads, the bot's own polling)
HOSTILE = '<script>alert("boom")</script>\n  two spaces kept\n"><img src=x onerror=alert(1)>'
TOKEN = re.compile(r"^[1-9][0-9]*:[A-Za-z0-9_-]{43}$")


@pytest.fixture
def browser(tmp_path):
    options = Options()
    options.binary_location = "/usr/bin/chromium"
    for flag in CHROMIUM_FLAGS:
        options.add_argument(flag)
    options.add_argument(f"--user-data-dir={tmp_path / 'chromium-profile'}")
    options.set_capability("goog:loggingPrefs", {"browser": "ALL"})
    driver = webdriver.Chrome(options=options, service=Service("/usr/bin/chromedriver"))
    try:
        yield driver
    finally:
        driver.quit()


class Bot:
    """The test's bot, over /v2 with the token the page showed."""

    def __init__(self, base_url: str, token: str):
        self.base_url, self.token, self.offset = base_url, token, 0

    def call(self, method: str, /, files=None, **params):
        headers = {"Authorization": f"Bearer {self.token}"}
        if files:
            answer = requests.post(f"{self.base_url}/v2/{method}", data=params, files=files,
                                   headers=headers, timeout=120)
        else:
            answer = requests.post(f"{self.base_url}/v2/{method}", json=params,
                                   headers=headers, timeout=30)
        assert answer.status_code == 200, answer.text
        return answer.json()["result"]

    def fail(self, method: str, /, **params) -> dict:
        """A call that must fail: its envelope."""
        answer = requests.post(f"{self.base_url}/v2/{method}", json=params, timeout=30,
                               headers={"Authorization": f"Bearer {self.token}"})
        assert answer.status_code >= 400, answer.text
        return answer.json()

    def next_update(self, key: str) -> dict:
        """Poll getUpdates until an update holding ``key`` arrives."""
        deadline = time.monotonic() + SLOW_DEADLINE
        while time.monotonic() < deadline:
            for update in self.call("getUpdates", offset=self.offset):
                self.offset = update["update_id"] + 1
                if key in update:
                    return update
            time.sleep(0.1)
        raise AssertionError(f"no update with {key} within {SLOW_DEADLINE} s")


def operator(server, method: str, /, **params):
    """An operator method of the running server, as its admin: its result."""
    answer = requests.post(f"{server.base_url}/manage/v1/{method}", json=params, timeout=30,
                           headers={"Authorization": f"Bearer {server.admin_token}"})
    assert answer.status_code == 200, answer.text
    return answer.json()["result"]


def wait_for(driver, condition, seconds: float, what: str):
    # A stale element is a list re-rendered between finding its rows and
    # reading them (the call list, the feed): the condition is asked again.
    started = time.monotonic()
    WebDriverWait(driver, seconds, poll_frequency=0.05,
                  ignored_exceptions=(StaleElementReferenceException,)).until(
        lambda d: condition(d), message=f"{what} not within {seconds} s")
    return time.monotonic() - started


def shown(driver, css: str, seconds: float = SHOWN_WITHIN, what: str | None = None):
    """Wait for the element; return it and how long it took to appear."""
    elapsed = wait_for(driver, lambda d: d.find_elements(By.CSS_SELECTOR, css), seconds,
                       what or css)
    return driver.find_element(By.CSS_SELECTOR, css), elapsed


def photo_png() -> bytes:
    image = Image.new("RGB", (480, 320), "#65aadd")
    draw = ImageDraw.Draw(image)
    for i in range(8):
        draw.ellipse((30 + i * 50, 60 + (i % 2) * 90, 110 + i * 50, 140 + (i % 2) * 90),
                     fill=("#faa774", "#7bc862", "#ee7aae", "#fff")[i % 4])
    buf = io.BytesIO()
    image.save(buf, "PNG")
    return buf.getvalue()


def inspected_json(driver, selection: str, kind: str) -> dict:
    """The JSON the inspector shows for ``selection`` ("message:N", "event:N")."""
    node, _ = shown(driver, f"#inspector-body[data-selection='{selection}'] pre[data-json={kind}]",
                    what=f"the inspector's {kind} of {selection}")
    return json.loads(node.get_attribute("textContent"))


def no_sideways_scroll(driver) -> None:
    widths = driver.execute_script(
        "const s = document.scrollingElement, m = document.getElementById('messages-scroll');"
        "return [s.scrollWidth, s.clientWidth, m.scrollWidth, m.clientWidth];")
    wide = driver.execute_script(
        "const m = document.getElementById('messages-scroll'), edge = m.getBoundingClientRect().right;"
        "return [...m.querySelectorAll('*')].filter(e => e.getBoundingClientRect().right > edge + 1)"
        ".slice(0, 5).map(e => e.tagName + '.' + e.className + ' ' + e.getBoundingClientRect().right);")
    assert widths[0] <= widths[1] and widths[2] <= widths[3], (widths, wide)


def sign_in(driver, base_url: str, token: str) -> None:
    driver.find_element(By.ID, "token").send_keys(token)
    driver.find_element(By.CSS_SELECTOR, "form button[type=submit]").click()


class Story:
    """What the steps of the story share: the browser, the server, the test's
    bot and what it sent, and how long each thing took to show."""

    def __init__(self, browser, server, tmp_path):
        self.browser, self.server, self.tmp_path = browser, server, tmp_path
        self.base = server.base_url
        self.timings: dict[str, float] = {}
        self.token = self.chat_id = self.ada_url = ""
        self.bot: Bot | None = None
        self.text: dict = {}       # the bot's first message, with its keyboard
        self.keyboard: dict = {}
        self.card: dict = {}


def test_a_person_chats_with_a_bot_in_the_browser(browser, tmp_path):
    started = time.monotonic()
    with running_server(tmp_path, BOTSVC_TEST_TOOLS=1) as server:
        story = Story(browser, server, tmp_path)
        a_wrong_token_is_refused_and_the_right_one_signs_in(story)
        a_bot_is_created_and_its_token_shown_once(story)
        a_user_reads_about_the_bot_and_presses_start(story)
        the_bots_text_and_hostile_text_appear(story)
        a_card_a_photo_and_a_voice_note_appear_and_play(story)
        a_click_reaches_the_bot_and_its_answers_show(story)
        an_edit_shows_and_a_deleted_message_goes(story)
        the_bots_message_opens_its_call_and_a_failed_call_shows(story)
        the_user_writes_back_and_the_inspector_shows_the_update(story)
        a_click_never_answered_says_the_bot_did_not_respond(story)
        stop_block_and_restart_each_show_as_a_line(story)
        another_chats_unread_count_comes_live(story)
        nothing_ran_and_no_token_shows(story)
        on_a_phone_nothing_scrolls_sideways(story)
        a_new_user_opens_with_the_same_bot(story)
        the_bot_manager_follows_a_broadcast(story)
    print(f"sandbox browser test: {time.monotonic() - started:.1f} s; shown after (s): "
          + ", ".join(f"{k} {v:.2f}" for k, v in story.timings.items()))


PICTURES = [ARTIFACTS / f"sandbox-{name}.png" for name in ("chat", "chat-phone", "bots", "new-user")]


def a_wrong_token_is_refused_and_the_right_one_signs_in(story: Story) -> None:
    browser, base = story.browser, story.base
    browser.get(f"{base}/sandbox/")
    assert browser.current_url == f"{base}/sandbox/signin"
    sign_in(browser, base, "not-the-token")
    refusal, _ = shown(browser, ".error", SLOW_DEADLINE)   # the form posts, the page reloads
    assert "not the admin token" in refusal.text
    # The 401 of that refusal is the one error the console may have seen.
    browser.get_log("browser")
    sign_in(browser, base, story.server.admin_token)
    shown(browser, "#user-select, .new-user", SLOW_DEADLINE)


def a_bot_is_created_and_its_token_shown_once(story: Story) -> None:
    """The bot manager: a bot, its token shown once with a copy button."""
    browser = story.browser
    browser.find_element(By.LINK_TEXT, "Bots").click()
    form, _ = shown(browser, "form.create-bot", SLOW_DEADLINE)
    form.find_element(By.NAME, "username").send_keys("browser_shop_bot")
    form.find_element(By.NAME, "display_name").send_keys("Shop <i>Bot</i>")
    form.find_element(By.NAME, "description").send_keys("Coffee, tea & <b>cake</b>")
    form.find_element(By.CSS_SELECTOR, "button[type=submit]").click()
    secret, _ = shown(browser, "#dialog[open] #dialog-secret-value", SLOW_DEADLINE)
    token = story.token = secret.text
    assert TOKEN.match(token)
    browser.find_element(By.ID, "dialog-copy").click()
    browser.find_element(By.CSS_SELECTOR, "#dialog button[value=ok]").click()
    wait_for(browser, lambda d: d.find_elements(By.CSS_SELECTOR, "article.bot"),
             SLOW_DEADLINE, "the bot's card")
    assert "Shop <i>Bot</i>" in browser.find_element(By.CSS_SELECTOR, "article.bot h2").text
    assert token not in browser.page_source
    story.bot = Bot(story.base, token)
    assert story.bot.call("getMe")["username"] == "browser_shop_bot"


def a_user_reads_about_the_bot_and_presses_start(story: Story) -> None:
    """A user, and their chat with the bot: before Start, what the bot says it
    does and no composer; Start with a parameter is a line."""
    browser, bot = story.browser, story.bot
    browser.find_element(By.LINK_TEXT, "Chats").click()
    new_user, _ = shown(browser, "form.new-user", SLOW_DEADLINE)
    new_user.find_element(By.NAME, "display_name").send_keys('Ada "><img src=x onerror=alert(2)>')
    new_user.find_element(By.CSS_SELECTOR, "button").click()
    entry, _ = shown(browser, ".chat-list a", SLOW_DEADLINE)
    assert browser.find_element(By.CSS_SELECTOR, "#user-select option").text.startswith(
        'Ada "><img src=x onerror=alert(2)>')
    entry.click()
    shown(browser, "#chat[data-state='not started']", SLOW_DEADLINE)
    story.ada_url = browser.current_url
    about, _ = shown(browser, "#about-bot:not([hidden])")
    assert about.find_element(By.ID, "about-text").text == "Coffee, tea & <b>cake</b>"
    assert not browser.find_element(By.ID, "composer").is_displayed()
    browser.find_element(By.ID, "start-param").send_keys("from_browser")
    browser.find_element(By.ID, "btn-start").click()
    update = bot.next_update("membership")
    assert update["membership"]["start_parameter"] == "from_browser"
    story.chat_id = update["membership"]["chat_id"]
    shown(browser, "#chat[data-state='active']")
    line, _ = shown(browser, ".line-start .line-text")
    assert line.text == "You started the bot (start parameter \u201cfrom_browser\u201d)"


def the_bots_text_and_hostile_text_appear(story: Story) -> None:
    """The bot sends; each message appears within 2 s, hostile text as text."""
    browser, bot, chat_id, timings = story.browser, story.bot, story.chat_id, story.timings
    keyboard = story.keyboard = {"inline_keyboard": [
        [{"text": "Press me", "callback_data": "press"},
         {"text": "Alert me", "callback_data": "alert"}],
        [{"text": "Docs", "url": "https://example.com/docs"},
         {"text": "Copy code", "copy_text": "SAVE10"}],
        [{"text": "Later", "callback_data": "later"}]]}
    text = story.text = bot.call("sendMessage", chat_id=chat_id, reply_markup=keyboard,
                                 text="Welcome to the shop!\nWhat would you like?")
    row, timings["text"] = shown(browser, f"#msg-{text['message_id']}")
    assert "in" in row.get_attribute("class").split()
    hostile = bot.call("sendMessage", chat_id=chat_id, text=HOSTILE)
    row, timings["hostile text"] = shown(browser, f"#msg-{hostile['message_id']}")
    assert row.find_element(By.CSS_SELECTOR, ".text").get_attribute("textContent") == HOSTILE
    assert row.find_elements(By.CSS_SELECTOR, "img, script") == []
    browser.find_element(By.XPATH, "//button[.='Copy code']").click()
    copied, _ = shown(browser, ".toast:not(.answer)")
    assert copied.text == "Copied to the clipboard"
    docs = browser.find_element(By.LINK_TEXT, "Docs")
    assert docs.get_attribute("href") == "https://example.com/docs"
    assert docs.get_attribute("target") == "_blank"
    assert "noopener" in docs.get_attribute("rel").split()


def a_card_a_photo_and_a_voice_note_appear_and_play(story: Story) -> None:
    browser, bot, chat_id, timings = story.browser, story.bot, story.chat_id, story.timings
    card = story.card = bot.call("sendCard", chat_id=chat_id, card={
        "type": "receipt", "title": "Order #1042", "subtitle": "Paid by card",
        "text": "Thank you!\nSee you soon.",
        "fields": [{"label": "Coffee", "value": "2 × 3.50"}, {"label": "Total", "value": "7.00 EUR"}]},
        reply_to_message_id=story.text["message_id"])
    card_row, timings["card"] = shown(browser, f"#msg-{card['message_id']} .card-receipt")
    assert card_row.find_element(By.CSS_SELECTOR, ".card-title").text == "Order #1042"
    assert [e.text for e in card_row.find_elements(By.CSS_SELECTOR, "dt")] == ["Coffee", "Total"]
    photo = bot.call("sendPhoto", chat_id=chat_id, caption="Our shop",
                     files={"photo": ("shop.png", photo_png(), "image/png")})
    _, timings["photo"] = shown(browser, f"#msg-{photo['message_id']} img.photo")
    voice = bot.call("sendVoice", chat_id=chat_id,
                     files={"voice": ("hello.mp3", Samples(story.tmp_path)["song.mp3"],
                                      "audio/mpeg")})
    _, timings["voice"] = shown(browser, f"#msg-{voice['message_id']} .voice audio")
    # The media come through the sandbox's own route, and they play.
    wait_for(browser, lambda d: d.execute_script(
        "return document.querySelector('img.photo').naturalWidth") == 480,
        SLOW_DEADLINE, "the photo's pixels")
    wait_for(browser, lambda d: d.execute_script(
        "return document.querySelector('.voice audio').readyState") >= 1,
        SLOW_DEADLINE, "the voice note's metadata")
    for source in browser.execute_script(
            "return [...document.querySelectorAll('img.photo, audio')].map(e => e.src)"):
        assert source.startswith(f"{story.base}/sandbox/media/") and story.token not in source


def a_click_reaches_the_bot_and_its_answers_show(story: Story) -> None:
    """A callback button: the bot gets the query, its answer shows as a toast
    (or an alert); the click is a line that opens the update as getUpdates gave it."""
    browser, bot, text, timings = story.browser, story.bot, story.text, story.timings
    browser.find_element(By.CSS_SELECTOR, f"#msg-{text['message_id']}").find_element(
        By.XPATH, ".//button[.='Press me']").click()
    clicked = bot.next_update("callback_query")
    query = clicked["callback_query"]
    assert query["data"] == "press" and query["message_id"] == text["message_id"]
    press_line, _ = shown(browser, ".line-click[data-status='pending'] .line-text")
    assert press_line.text == "You pressed \u201cPress me\u201d"
    press_line.click()
    event = press_line.find_element(By.XPATH, "..").get_attribute("data-inspect")
    assert inspected_json(browser, event, "update") == clicked
    bot.call("answerCallbackQuery", callback_query_id=query["id"], text="Pressed <b>!</b>")
    _, timings["toast"] = shown(browser, ".toast.answer")
    assert browser.find_element(By.CSS_SELECTOR, ".toast.answer").text == "Pressed <b>!</b>"
    browser.find_element(By.XPATH, "//button[.='Alert me']").click()
    query = bot.next_update("callback_query")["callback_query"]
    bot.call("answerCallbackQuery", callback_query_id=query["id"], text="Really?",
             show_alert=True)
    _, timings["alert"] = shown(browser, "#dialog[open]")
    assert browser.find_element(By.ID, "dialog-text").text == "Really?"
    browser.find_element(By.CSS_SELECTOR, "#dialog button[value=ok]").click()


def an_edit_shows_and_a_deleted_message_goes(story: Story) -> None:
    """An edit shows "edited" and the new text; a deleted message goes away."""
    browser, bot, chat_id, text = story.browser, story.bot, story.chat_id, story.text
    bot.call("editMessageText", chat_id=chat_id, message_id=text["message_id"],
             text="Prices changed:\nnow 3.20")
    _, story.timings["edit"] = shown(browser, f"#msg-{text['message_id']} .edited")
    assert browser.find_element(By.CSS_SELECTOR, f"#msg-{text['message_id']} .text").text \
        == "Prices changed:\nnow 3.20"
    doomed = bot.call("sendMessage", chat_id=chat_id, text="This message will self-destruct")
    shown(browser, f"#msg-{doomed['message_id']}")
    bot.call("deleteMessage", chat_id=chat_id, message_id=doomed["message_id"])
    story.timings["delete"] = wait_for(browser, lambda d: not d.find_elements(
        By.ID, f"msg-{doomed['message_id']}"), SHOWN_WITHIN, "the deletion")


def the_bots_message_opens_its_call_and_a_failed_call_shows(story: Story) -> None:
    """The bot's message opens the call that sent it, and the edit after it;
    a failing call of the bot shows in its feed, with its description."""
    browser, text = story.browser, story.text
    browser.find_element(By.CSS_SELECTOR, f"#msg-{text['message_id']} .text").click()
    call = inspected_json(browser, f"message:{text['message_id']}", "call")
    assert call["result"] == text and call["params"]["reply_markup"] == story.keyboard
    assert [h.text for h in browser.find_elements(
        By.CSS_SELECTOR, "#inspector-body .inspect-section h4")][:2] == [
        "The call that sent it", "Then: editMessageText"]
    refused = story.bot.fail("sendMessage", chat_id="vc_" + "0" * 40, text="to nobody")
    failed, story.timings["failed call"] = shown(browser, "#feed .call.failed")
    assert failed.find_element(By.CSS_SELECTOR, ".call-method").text == "sendMessage"
    assert failed.find_element(By.CSS_SELECTOR, ".call-status").text == "404 CHAT_NOT_FOUND"
    assert failed.find_element(By.CSS_SELECTOR, ".call-description").text \
        == refused["description"]
    browser.find_element(By.ID, "feed-failures").click()
    wait_for(browser, lambda d: {e.get_attribute("class") for e in d.find_elements(
        By.CSS_SELECTOR, "#feed .call")} == {"call failed"}, SHOWN_WITHIN, "failures only")
    browser.find_element(By.ID, "feed-failures").click()
    shown(browser, "#feed .call.ok")


def the_user_writes_back_and_the_inspector_shows_the_update(story: Story) -> None:
    """Shift+Enter is a line break, Enter sends; the inspector shows the
    update the bot received, the ids to copy and a curl line with no token."""
    browser, chat_id = story.browser, story.chat_id
    composer = browser.find_element(By.ID, "composer-text")
    composer.send_keys("Thanks <3", Keys.SHIFT, Keys.ENTER, Keys.SHIFT, "Bye")
    composer.send_keys(Keys.ENTER)
    said = story.bot.next_update("message")
    sent = said["message"]
    assert sent["text"] == "Thanks <3\nBye" and sent["from_bot"] is False
    mine, _ = shown(browser, f"#msg-{sent['message_id']}.out")
    assert mine.find_element(By.CSS_SELECTOR, ".text").get_attribute("textContent") \
        == "Thanks <3\nBye"
    mine.find_element(By.CSS_SELECTOR, ".text").click()
    assert inspected_json(browser, f"message:{sent['message_id']}", "update") == said
    chips = {c.find_element(By.CSS_SELECTOR, ".id-name").text: c.get_attribute("data-copy")
             for c in browser.find_elements(By.CSS_SELECTOR, "#inspector-body .id-chip")}
    assert chips == {"chat_id": chat_id, "message_id": str(sent["message_id"]),
                     "update_id": str(said["update_id"])}
    curl = browser.find_element(By.CSS_SELECTOR, "#inspector-body .curl")
    command = curl.get_attribute("data-command")
    assert command.startswith(f"curl -sS -X POST '{story.base}/v2/sendMessage'")
    assert '"Authorization: Bearer $BOT_TOKEN"' in command and story.token not in command
    assert json.loads(command.split("--data-raw '", 1)[1].rstrip("'")) == {
        "chat_id": chat_id, "text": "Got it!", "reply_to_message_id": sent["message_id"]}


def a_click_never_answered_says_the_bot_did_not_respond(story: Story) -> None:
    """It spins, then "did not respond" once the service clock, advanced from
    the page, is 15 s past it."""
    browser = story.browser
    browser.find_element(By.XPATH, "//button[.='Later']").click()
    shown(browser, ".kb-btn.pending")
    story.bot.next_update("callback_query")               # received, never answered
    waiting, _ = shown(browser, ".line-click[data-status='pending'] .line-status")
    assert waiting.text == "Waiting for the bot\u2026"
    browser.find_element(By.CSS_SELECTOR, "#tools [data-advance='60']").click()
    silent, story.timings["no answer"] = shown(browser, ".line-click[data-status='silent']")
    assert silent.find_element(By.CSS_SELECTOR, ".line-status").text \
        == "The bot did not respond"
    wait_for(browser, lambda d: not d.find_elements(By.CSS_SELECTOR, ".kb-btn.pending"),
             SHOWN_WITHIN, "the spinner's end")
    assert "did not respond" in browser.find_element(By.CSS_SELECTOR, ".toast.silent").text
    wait_for(browser, lambda d: int(d.find_element(By.ID, "clock-now").get_attribute(
        "data-unix")) >= time.time() + 59, SHOWN_WITHIN, "the advanced clock in the page")


def stop_block_and_restart_each_show_as_a_line(story: Story) -> None:
    """Each a line, the bar in place of the composer."""
    browser, bot = story.browser, story.bot
    browser.find_element(By.ID, "btn-stop").click()
    shown(browser, "#chat[data-state='stopped'] #state-bar:not([hidden])")
    assert browser.find_element(By.ID, "btn-start").text == "Restart"
    assert not browser.find_element(By.ID, "composer").is_displayed()
    assert bot.next_update("membership")["membership"]["status"] == "stopped"
    shown(browser, ".line-stop")
    browser.find_element(By.ID, "btn-block").click()
    shown(browser, "#chat[data-state='blocked']")
    shown(browser, ".line-block")
    assert browser.find_element(By.ID, "btn-start").text == "Unblock"
    assert not browser.find_element(By.ID, "btn-block").is_displayed()
    browser.find_element(By.ID, "btn-start").click()
    shown(browser, "#chat[data-state='active'] #composer")
    shown(browser, ".line-unblock")
    restarted = bot.next_update("membership")
    assert restarted["membership"] == {"chat_id": story.chat_id, "status": "active"}
    assert [e.get_attribute("class").split()[1] for e in browser.find_elements(
        By.CSS_SELECTOR, ".line:not(.line-click)")] == [
        "line-start", "line-stop", "line-block", "line-unblock"]


def another_chats_unread_count_comes_live(story: Story) -> None:
    """Another chat's last message and unread count come live in the list."""
    other = operator(story.server, "createBot", username="other_news_bot", display_name="News")
    ada = int(story.ada_url.rstrip("/").split("/")[-2])
    news_chat = operator(story.server, "userStart", user_id=ada,
                         bot_id=other["bot"]["id"])["chat_id"]
    news = Bot(story.base, other["token"])
    for headline in ("Rain today", "Sun tomorrow"):
        news.call("sendMessage", chat_id=news_chat, text=headline)
    entry, _ = shown(story.browser, f".chat-list li[data-bot-id='{other['bot']['id']}']"
                                    " .unread:not([hidden])", SHOWN_WITHIN + 2)
    assert entry.text == "2"
    news_entry = entry.find_element(By.XPATH, "../..")
    assert news_entry.find_element(By.CSS_SELECTOR, ".entry-preview").text == "Sun tomorrow"


def nothing_ran_and_no_token_shows(story: Story) -> None:
    """No script of the page's text ran, no token anywhere; pictures for the
    record (docs/sandbox.png with BOTSVC_DOCS_SCREENSHOT=1)."""
    browser, token = story.browser, story.token
    with pytest.raises(NoAlertPresentException):
        browser.switch_to.alert.text  # noqa: B018
    assert token not in browser.page_source and story.server.admin_token not in browser.page_source
    assert token not in browser.current_url
    ARTIFACTS.mkdir(exist_ok=True)
    time.sleep(0.3)  # let the images settle for the picture
    browser.save_screenshot(str(PICTURES[0]))
    if os.environ.get("BOTSVC_DOCS_SCREENSHOT") == "1":
        the_docs_picture(story)


def the_docs_picture(story: Story) -> None:
    browser, card = story.browser, story.card
    browser.set_window_size(1440, 1150)
    story.bot.fail("editMessageText", chat_id=story.chat_id,
                   message_id=story.text["message_id"], text="")
    shown(browser, "#feed .call.failed .call-description")
    card_row = browser.find_element(By.ID, f"msg-{card['message_id']}")
    card_row.find_element(By.CSS_SELECTOR, ".card-title").click()
    inspected_json(browser, f"message:{card['message_id']}", "call")
    browser.execute_script(
        "arguments[0].scrollIntoView({block: 'center'});"
        "document.getElementById('dev-pane').scrollTop = 0;"
        "document.getElementById('toasts').replaceChildren();", card_row)
    time.sleep(0.5)
    DOCS_PICTURE.parent.mkdir(exist_ok=True)
    browser.save_screenshot(str(DOCS_PICTURE))
    browser.set_window_size(1280, 1000)


def on_a_phone_nothing_scrolls_sideways(story: Story) -> None:
    """A phone: long labels ellipsize, the chat's state shows, nothing
    scrolls sideways."""
    browser = story.browser
    long_label = "Add the large oat-milk cappuccino with extra foam to my order"
    story.bot.call("sendMessage", chat_id=story.chat_id, text="Anything else?", reply_markup={
        "inline_keyboard": [[{"text": long_label, "callback_data": "more"},
                             {"text": "No", "callback_data": "no"}]]})
    browser.set_window_size(390, 844)
    browser.refresh()
    wait_for(browser, lambda d: "Anything else?" in " ".join(
        r.text for r in d.find_elements(By.CSS_SELECTOR, ".row.in")[-1:]),
        SLOW_DEADLINE, "the last message")
    last_row = browser.find_elements(By.CSS_SELECTOR, ".row.in")[-1]
    label = last_row.find_element(By.CSS_SELECTOR, ".kb-btn .kb-label")
    assert label.get_attribute("textContent") == long_label
    assert browser.execute_script(
        "const b = arguments[0]; return [b.scrollWidth > b.clientWidth,"
        " getComputedStyle(b).textOverflow,"
        " b.closest('.kb-btn').getBoundingClientRect().right <= window.innerWidth];",
        label) == [True, "ellipsis", True]
    assert browser.find_element(By.ID, "membership").is_displayed()
    assert browser.execute_script(
        "return document.getElementById('membership').getBoundingClientRect().right"
        " <= window.innerWidth")
    no_sideways_scroll(browser)
    time.sleep(0.3)
    browser.save_screenshot(str(PICTURES[1]))


def a_new_user_opens_with_the_same_bot(story: Story) -> None:
    """A new user opens with the same bot, and its description before Start."""
    browser, ada_url = story.browser, story.ada_url
    browser.set_window_size(1280, 1000)
    browser.get(ada_url)
    new_user, _ = shown(browser, "form.new-user", SLOW_DEADLINE)
    new_user.find_element(By.NAME, "display_name").send_keys("Bob")
    new_user.find_element(By.CSS_SELECTOR, "button").click()
    shown(browser, "#chat[data-state='not started']", SLOW_DEADLINE)
    *_, bob, same_bot = browser.current_url.rstrip("/").split("/")
    ada = int(ada_url.rstrip("/").split("/")[-2])
    assert int(bob) != ada and same_bot == ada_url.rstrip("/").split("/")[-1]
    shown(browser, "#about-bot:not([hidden])")
    browser.save_screenshot(str(PICTURES[3]))
    Select(browser.find_element(By.ID, "user-select")).select_by_value(str(ada))
    shown(browser, "#chat[data-state='active']", SLOW_DEADLINE)
    assert browser.current_url == ada_url


def the_bot_manager_follows_a_broadcast(story: Story) -> None:
    """The bot manager follows a broadcast until it completes; the console
    stayed free of errors all along."""
    browser = story.browser
    story.bot.call("createBroadcast", method="sendMessage", payload={"text": "Weekend sale!"})
    browser.find_element(By.LINK_TEXT, "Bots").click()
    shown(browser, "article.bot .broadcasts .pill.completed", SLOW_DEADLINE)
    assert browser.find_element(By.CSS_SELECTOR, ".broadcasts tbody td:nth-child(4)").text == "1"
    browser.save_screenshot(str(PICTURES[2]))
    print("\nsandbox screenshots:", *map(str, PICTURES))
    errors = [e for e in browser.get_log("browser") if e["level"] == "SEVERE"]
    assert errors == []
