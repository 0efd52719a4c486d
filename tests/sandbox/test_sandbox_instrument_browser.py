"""The sandbox as an instrument, in a real browser (Debian's headless Chromium,
Selenium) against the real service with the testing tools on: one browser
session, one server, to keep CI short.

Sign-in brings the person back to the bot's page they asked for; a burst of
58 calls is listed whole, a fresh page pages to the older ones; Pause holds
new calls until Resume, Clear view empties the list, not the log. Updates
waiting while the bot has not polled for a minute (the service clock moved
on) raise a warning and a banner, and the tab's title says so; rows made
after advanceClock say the clock runs ahead. "Chat with it" opens that bot's
chat. In the chat: Hebrew text is laid out right to left; Copy as curl
sends a multipart caption starting with "@" by --form-string and a
form-encoded call as a form; a 16,384-byte text offers no made-up command; an
answered click offers none, an unanswered one only its id; an edit has its
own; a toast never takes a click meant for the chat; the inspector comes
into view when the pane was scrolled down to the calls; another chat's
unread count is in the title; two days on by the service clock the sidebar
shows dates and the names keep their room; a failing webhook raises a
banner; at 390 px a failed call's method is not cut.
The server stopped: a banner says it cannot be reached, and so does an
action's toast (never "Failed to fetch").
"""
from __future__ import annotations

import io
import time

import pytest
import requests
from selenium.webdriver.common.by import By

from botsvc.devkit.paths import REPO
from botsvc.devkit.receivers import Receiver, statuses
from botsvc.devkit.servers import running_server
from tests.sandbox import test_sandbox_browser as walk
from tests.sandbox.test_sandbox_browser import (
    SLOW_DEADLINE,
    Bot,
    operator,
    shown,
    sign_in,
    wait_for,
)

pytestmark = [pytest.mark.server, pytest.mark.browser]
browser = walk.browser   # the same headless Chromium
ARTIFACTS = REPO / "test-artifacts"


def rows(driver) -> list[int]:
    return driver.execute_script(
        "return [...document.querySelectorAll('#feed > li.call')].map((li) => +li.dataset.callId)")


def count_is(driver, n: int, what: str) -> None:
    wait_for(driver, lambda d: len(rows(d)) == n, SLOW_DEADLINE, what)


def click_js(driver, css: str) -> None:
    wait_for(driver, lambda d: d.execute_script(
        "const e = document.querySelector(arguments[0]); if (e) e.click(); return !!e;", css),
        SLOW_DEADLINE, f"a click on {css}")


def command_of(driver, label_part: str) -> str | None:
    return driver.execute_script(
        "const b = [...document.querySelectorAll('#inspector-body .curl')].find("
        "(b) => b.textContent.includes(arguments[0])); return b ? b.dataset.command : null;",
        label_part)


def curl_of(driver, url_part: str) -> str:
    """The inspector's "Copy as curl" once it is the inspected call's (the
    one inspected before is shown until the new one renders: both are "The
    bot's message")."""
    wait_for(driver, lambda d: url_part in (command_of(d, "Copy as curl") or ""),
             SLOW_DEADLINE, f"the curl of {url_part}")
    return command_of(driver, "Copy as curl")


def inspect(driver, css: str, title_part: str) -> None:
    click_js(driver, css)
    wait_for(driver, lambda d: title_part in d.execute_script(
        "const t = document.querySelector('#inspector-body .inspect-title');"
        " return t ? t.textContent : '';"), SLOW_DEADLINE, f"the inspector on {title_part}")


class Probe:
    """What the steps share: the browser, the server, the probed bot (and
    another), their user and chats, and the messages a later step inspects."""

    def __init__(self, browser, server):
        self.browser, self.server, self.base = browser, server, server.base_url
        created = operator(server, "createBot", username="probe_bot", display_name="Probe")
        self.token, self.bot_id = created["token"], created["bot"]["id"]
        self.bot = Bot(self.base, self.token)
        self.other = operator(server, "createBot", username="other_bot", display_name="Other")
        self.user_id = operator(server, "createUser", display_name="Ada")["user_id"]
        self.chat_id = operator(server, "userStart", user_id=self.user_id,
                                bot_id=self.bot_id)["chat_id"]
        self.other_chat = operator(server, "userStart", user_id=self.user_id,
                                   bot_id=self.other["bot"]["id"])["chat_id"]
        self.hebrew: dict = {}
        self.long: dict = {}
        self.formed: dict = {}   # the bot's form-encoded message with a keyboard


def test_the_sandbox_as_an_instrument(browser, tmp_path):
    ARTIFACTS.mkdir(exist_ok=True)
    with running_server(tmp_path, BOTSVC_TEST_TOOLS=1, BOTSVC_WEBHOOK_ALLOW_PRIVATE=1) as server:
        probe = Probe(browser, server)
        probe.bot.next_update("message")                    # the /start: nothing pending
        probe.bot.call("getMe")
        sign_in_returns_to_the_page_asked_for(probe)
        burst_s = a_burst_is_listed_whole_and_pages_to_older_calls(probe)
        pause_holds_new_calls_and_clear_view_empties_the_list(probe)
        the_logs_filters_find_text_and_a_chat(probe)
        updates_waiting_with_no_poll_raise_a_banner(probe)
        right_to_left_text_and_copy_as_curl_as_sent(probe)
        a_click_and_a_long_text_offer_no_made_up_command(probe)
        the_inspector_comes_into_view_and_toasts_take_no_click(probe)
        another_chat_and_two_days_on_in_the_sidebar(probe)
        a_failing_webhook_raises_a_banner(probe)
        at_390_px_a_failed_calls_method_is_whole(probe)
        the_server_gone_says_so(probe)
        assert burst_s < 30


def sign_in_returns_to_the_page_asked_for(probe: Probe) -> None:
    browser, base, bot_id = probe.browser, probe.base, probe.bot_id
    browser.get(f"{base}/sandbox/bots/{bot_id}")
    assert browser.current_url.startswith(f"{base}/sandbox/signin?next=")
    sign_in(browser, base, probe.server.admin_token)
    wait_for(browser, lambda d: d.current_url == f"{base}/sandbox/bots/{bot_id}",
             SLOW_DEADLINE, "the bot's page after sign-in")
    count_is(browser, 2, "the first calls")   # getUpdates (recorded: it had one), getMe


def a_burst_is_listed_whole_and_pages_to_older_calls(probe: Probe) -> float:
    """Every call listed, newest first; a fresh page pages to older ones.
    How long the burst took, in seconds."""
    browser = probe.browser
    started = time.monotonic()
    with requests.Session() as fast:
        fast.headers["Authorization"] = f"Bearer {probe.token}"
        for _ in range(58):
            assert fast.post(f"{probe.base}/v2/getMe", timeout=10).status_code == 200
    burst_s = time.monotonic() - started
    count_is(browser, 60, "the whole burst")
    listed = rows(browser)
    assert listed == sorted(listed, reverse=True) and len(set(listed)) == 60
    browser.refresh()
    count_is(browser, 50, "a fresh page's newest 50")
    click_js(browser, "#feed-older:not([hidden])")
    count_is(browser, 60, "the older calls")
    assert rows(browser) == listed
    assert browser.find_element(By.ID, "feed-older").get_attribute("hidden") is not None
    return burst_s


def pause_holds_new_calls_and_clear_view_empties_the_list(probe: Probe) -> None:
    """Pause holds new calls, Resume shows them; Clear view empties the list only."""
    browser, bot = probe.browser, probe.bot
    click_js(browser, "#feed-pause")
    bot.call("getMe")
    shown(browser, "#feed-held:not([hidden])", SLOW_DEADLINE)
    wait_for(browser, lambda d: "1 new call held" in d.find_element(By.ID, "feed-held").text,
             SLOW_DEADLINE, "the held call")
    assert len(rows(browser)) == 60
    click_js(browser, "#feed-pause")
    count_is(browser, 61, "the held call shown on resume")
    click_js(browser, "#feed-clear")
    count_is(browser, 0, "the cleared list")
    bot.call("getMe")
    count_is(browser, 1, "a new call after Clear view")
    assert len(operator(probe.server, "getBotCalls", bot_id=probe.bot_id,
                        limit=100)["calls"]) == 62


def the_logs_filters_find_text_and_a_chat(probe: Probe) -> None:
    """The log's own filters on the page: text (any case), then a chat."""
    browser, chat_id = probe.browser, probe.chat_id
    probe.bot.call("sendMessage", chat_id=chat_id, text="needle in the log")
    count_is(browser, 2, "the send after Clear view")
    newest = operator(probe.server, "getBotCalls", bot_id=probe.bot_id,
                      limit=1)["calls"][0]["call_id"]

    def filter_by(css: str, value: str) -> None:
        browser.execute_script(
            "const box = document.querySelector(arguments[0]); box.value = arguments[1];"
            " box.dispatchEvent(new Event('input', {bubbles: true}));"
            " box.dispatchEvent(new Event('change', {bubbles: true}));", css, value)

    filter_by("#feed-search", "NEEDLE")
    wait_for(browser, lambda d: rows(d) == [newest], SLOW_DEADLINE, "the search's one call")
    filter_by("#feed-search", "")
    wait_for(browser, lambda d: len(rows(d)) > 1, SLOW_DEADLINE, "the log again")
    filter_by("#feed-chat", chat_id)
    wait_for(browser, lambda d: rows(d) == [newest], SLOW_DEADLINE, "the chat's one call")
    filter_by("#feed-chat", "")
    wait_for(browser, lambda d: len(rows(d)) > 1, SLOW_DEADLINE, "the log again")


def updates_waiting_with_no_poll_raise_a_banner(probe: Probe) -> None:
    """Updates waiting, no poll for a minute: a warning, a banner, the title;
    the rows made after advanceClock say the clock runs ahead."""
    browser, server = probe.browser, probe.server
    operator(server, "userSendMessage", user_id=probe.user_id, bot_id=probe.bot_id,
             text="anyone?")
    operator(server, "advanceClock", seconds=120)
    shown(browser, "#health:not([hidden]) [data-issue='not-polling']", SLOW_DEADLINE)
    banner = browser.find_element(By.ID, "health").text
    # the /start, polled but not yet acknowledged (no poll with a later offset), and this one
    assert "Probe: 2 updates waiting, and the bot has not polled for 2 min." in banner
    assert not browser.find_element(By.ID, "vital-stalled-box").get_attribute("hidden")
    assert browser.title.startswith("\u26a0 ")
    browser.save_screenshot(str(ARTIFACTS / "sandbox-instrument-banner.png"))
    probe.bot.next_update("message")                    # the bot polls again
    wait_for(browser, lambda d: d.find_element(By.ID, "health").get_attribute("hidden")
             is not None, SLOW_DEADLINE, "the banner's end")
    assert not browser.title.startswith("\u26a0")
    shown(browser, "#feed li.call .pill.clock-ahead", SLOW_DEADLINE)
    assert "clock +2 min" in browser.find_element(
        By.CSS_SELECTOR, "#feed li.call .pill.clock-ahead").text


def right_to_left_text_and_copy_as_curl_as_sent(probe: Probe) -> None:
    """"Chat with it" opens this bot's chat; right-to-left text; Copy as curl
    as each call was sent (a multipart caption starting with "@", a form);
    an edit has its own command."""
    browser, base, bot, chat_id = probe.browser, probe.base, probe.bot, probe.chat_id
    click_js(browser, "#chat-with-it")
    wait_for(browser, lambda d: d.current_url == f"{base}/sandbox/chats/{probe.user_id}/"
             f"{probe.bot_id}", SLOW_DEADLINE, "the bot's chat")
    hebrew = probe.hebrew = bot.call("sendMessage", chat_id=chat_id,
                                     text="\u05e9\u05dc\u05d5\u05dd world")
    line, _ = shown(browser, f"#msg-{hebrew['message_id']} .text", SLOW_DEADLINE)
    assert line.get_attribute("dir") == "auto"
    assert browser.execute_script("return getComputedStyle(arguments[0]).direction",
                                  line) == "rtl"
    auth = {"Authorization": f"Bearer {probe.token}"}
    photo = requests.post(
        f"{base}/v2/sendPhoto", headers=auth, data={"chat_id": chat_id, "caption": "@alice <b>"},
        files={"photo": ("p.png", io.BytesIO(walk.photo_png()), "image/png")},
        timeout=30).json()["result"]
    inspect(browser, f"#msg-{photo['message_id']} .text", "The bot's message")
    command = curl_of(browser, "/v2/sendPhoto")
    assert "--form-string 'caption=@alice <b>'" in command
    assert "-F 'photo=@p.png'" in command and "-F 'caption" not in command
    formed = probe.formed = requests.post(
        f"{base}/v2/sendMessage", headers=auth,
        data={"chat_id": chat_id, "text": "Sure?", "reply_markup": KEYBOARD},
        timeout=30).json()["result"]
    inspect(browser, f"#msg-{formed['message_id']} .text", "The bot's message")
    command = curl_of(browser, "/v2/sendMessage")
    assert f"--data-urlencode 'reply_markup={KEYBOARD}'" in command
    assert "--data-urlencode 'text=Sure?'" in command and "application/json" not in command
    bot.call("editMessageText", chat_id=chat_id, message_id=formed["message_id"],
             text="Really sure?", reply_markup={"inline_keyboard": [[
                 {"text": "Yes", "callback_data": "yes"}]]})
    wait_for(browser, lambda d: command_of(d, "Copy this editMessageText as curl"),
             SLOW_DEADLINE, "the edit's curl")
    assert '"text":"Really sure?"' in command_of(browser, "Copy this editMessageText")


KEYBOARD = '{"inline_keyboard":[[{"text":"Yes","callback_data":"yes"}]]}'


def a_click_and_a_long_text_offer_no_made_up_command(probe: Probe) -> None:
    """An unanswered click offers its id alone, an answered one nothing; a
    16,384-byte text, valid, too large to keep whole: no made-up command."""
    browser, bot = probe.browser, probe.bot
    clicked = operator(probe.server, "userClickButton", user_id=probe.user_id,
                       bot_id=probe.bot_id, message_id=probe.formed["message_id"],
                       callback_data="yes")
    bot.next_update("callback_query")
    inspect(browser, ".line-click .line-text", "You pressed")
    wait_for(browser, lambda d: command_of(d, "Copy an answer as curl"), SLOW_DEADLINE,
             "the answer's curl")
    answer_command = command_of(browser, "Copy an answer as curl")
    assert answer_command.endswith(   # the id alone: no canned text
        f" \\\n  --data-urlencode 'callback_query_id={clicked['callback_query_id']}'")
    assert "text" not in answer_command
    bot.call("answerCallbackQuery", callback_query_id=clicked["callback_query_id"])
    wait_for(browser, lambda d: d.find_elements(By.CSS_SELECTOR, "#inspector-body .curl-none")
             and not command_of(d, "Copy an answer"), SLOW_DEADLINE, "no curl once answered")
    assert "Already answered" in browser.find_element(
        By.CSS_SELECTOR, "#inspector-body .curl-none").text
    long = probe.long = bot.call("sendMessage", chat_id=probe.chat_id, text="x" * 16384)
    inspect(browser, f"#msg-{long['message_id']} .text", "The bot's message")
    wait_for(browser, lambda d: d.find_elements(
        By.CSS_SELECTOR, "#inspector-body .not-in-log, #inspector-body .curl-none"),
        SLOW_DEADLINE, "what the inspector says of it")
    assert browser.find_elements(By.CSS_SELECTOR, "#inspector-body .curl") == []
    assert "Hello!" not in browser.find_element(By.ID, "inspector-body").text


def the_inspector_comes_into_view_and_toasts_take_no_click(probe: Probe) -> None:
    """The inspector comes into view with the pane scrolled down to the
    calls; a toast never takes a click meant for the chat's newest line."""
    browser = probe.browser
    browser.execute_script("const p = document.getElementById('dev-pane');"
                           " p.scrollTop = p.scrollHeight;")
    inspect(browser, f"#msg-{probe.hebrew['message_id']} .text", "The bot's message")
    wait_for(browser, lambda d: d.execute_script(
        "const p = document.getElementById('dev-pane').getBoundingClientRect();"
        "const i = document.getElementById('inspector').getBoundingClientRect();"
        "return i.top >= p.top - 1 && i.top < p.bottom;"), SLOW_DEADLINE,
        "the inspector in view")
    browser.execute_script("Sandbox.toast('A toast over the chat')")
    newest = browser.find_element(By.CSS_SELECTOR, f"#msg-{probe.long['message_id']} .bubble")
    assert browser.execute_script(
        "const r = arguments[0].getBoundingClientRect();"
        "const at = document.elementFromPoint(r.left + r.width / 2, r.bottom - 8);"
        "return !!at && !at.closest('.toasts');", newest)


def another_chat_and_two_days_on_in_the_sidebar(probe: Probe) -> None:
    """Another chat's unread messages are counted in the tab's title; two
    days on by the service clock the sidebar shows dates, names keep their room."""
    browser, other = probe.browser, probe.other
    Bot(probe.base, other["token"]).call("sendMessage", chat_id=probe.other_chat, text="psst")
    wait_for(browser, lambda d: d.title.startswith("(1) "), SLOW_DEADLINE,
             "the unread count in the title")
    browser.save_screenshot(str(ARTIFACTS / "sandbox-instrument.png"))
    operator(probe.server, "advanceClock", seconds=2 * 86400)
    entry = f"#chat-list li[data-bot-id='{other['bot']['id']}']"
    wait_for(browser, lambda d: ":" not in d.find_element(
        By.CSS_SELECTOR, f"{entry} .entry-time").text, SLOW_DEADLINE, "a date, not a time")
    assert browser.execute_script(
        "const n = document.querySelector(arguments[0] + ' .entry-name');"
        "return n.scrollWidth <= n.clientWidth", entry)


def a_failing_webhook_raises_a_banner(probe: Probe) -> None:
    """The webhook failing: a banner, since when."""
    receiver = Receiver(None, statuses(500))
    try:
        probe.bot.call("setWebhook", url=f"http://127.0.0.1:{receiver.port}/hook",
                       secret_token="a-secret-token-of-16")
        operator(probe.server, "userSendMessage", user_id=probe.user_id, bot_id=probe.bot_id,
                 text="hook?")
        shown(probe.browser, "#health:not([hidden]) [data-issue='webhook-failing']",
              SLOW_DEADLINE)
        assert "Probe: the webhook has been failing since" in probe.browser.find_element(
            By.ID, "health").text
        probe.bot.call("deleteWebhook")
    finally:
        receiver.close()


def at_390_px_a_failed_calls_method_is_whole(probe: Probe) -> None:
    browser = probe.browser
    probe.bot.fail("sendMessage", chat_id=probe.chat_id, text="")
    browser.set_window_size(390, 844)
    browser.get(f"{probe.base}/sandbox/bots/{probe.bot_id}")
    method, _ = shown(browser, "#feed li.call.failed .call-method", SLOW_DEADLINE)
    assert method.text == "sendMessage"
    assert browser.execute_script(
        "return arguments[0].scrollWidth <= arguments[0].clientWidth", method)
    browser.save_screenshot(str(ARTIFACTS / "sandbox-instrument-phone.png"))


def the_server_gone_says_so(probe: Probe) -> None:
    """A banner says it cannot be reached, and so does an action's toast
    (never "Failed to fetch"): the page does not freeze silently."""
    browser = probe.browser
    probe.server.stop()
    shown(browser, "#health:not([hidden]) [data-issue='unreachable']", SLOW_DEADLINE)
    assert "cannot be reached" in browser.find_element(By.ID, "health").text
    click_js(browser, "#tools [data-advance='60']")   # an action says so too
    wait_for(browser, lambda d: any(t.text == "The server cannot be reached" for t in
                                    d.find_elements(By.CSS_SELECTOR, ".toast.error")),
             SLOW_DEADLINE, "the action's toast")
