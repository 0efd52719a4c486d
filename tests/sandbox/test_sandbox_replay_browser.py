"""Replay and one update's path in a real browser (Debian's headless Chromium,
Selenium) against the real service with the testing tools on and local webhooks allowed: the inspector
of a user's message shows the update's path (delivered by which getUpdates,
how long after, the bot's reply); Redeliver sends it again as a new update,
which the bot receives by polling and the path lists as a replay with its own
path; from the bot's reply, and from a call in the list, the path leads back
to the update it answered; Re-send on a call sends it again as the bot; with
a webhook, Redeliver on an attempt reaches the receiver again, marked as a
replay in the list of attempts, whose request and response open."""
from __future__ import annotations

import pytest
import requests
from selenium.common.exceptions import (
    ElementNotInteractableException,
    NoSuchElementException,
    StaleElementReferenceException,
)
from selenium.webdriver.common.by import By

from botsvc.devkit.receivers import Receiver, statuses
from botsvc.devkit.servers import running_server
from tests.sandbox import test_sandbox_browser as walk
from tests.sandbox.test_sandbox_browser import SLOW_DEADLINE, Bot, shown, sign_in, wait_for
from tests.webhooks.support import received_ids

pytestmark = [pytest.mark.server, pytest.mark.browser]
browser = walk.browser   # the same headless Chromium


def operator(server, method: str, /, **params):
    answer = requests.post(f"{server.base_url}/manage/v1/{method}", json=params, timeout=30,
                           headers={"Authorization": f"Bearer {server.admin_token}"})
    assert answer.status_code == 200, answer.text
    return answer.json()["result"]


def path_sections(driver, title_part: str) -> list[dict]:
    """The inspector's path sections with that in their title, read in one
    script run (the inspector redraws as the chat changes: elements found
    one call earlier may be gone): each as its title, its delivery step's
    text and ``by``, and its reaction lines."""
    return [s for s in driver.execute_script("""
        return [...document.querySelectorAll('#inspector-body .path-section')].map((s) => ({
          title: s.querySelector('h4') ? s.querySelector('h4').textContent : '',
          by: (s.querySelector('[data-by]') || {dataset: {}}).dataset.by || null,
          delivery: (s.querySelector('[data-by]') || {textContent: ''}).textContent,
          calls: [...s.querySelectorAll('.path-call-line')].map((c) => c.textContent)}));
        """) if title_part in s["title"]]


def path_section(browser, title_part: str) -> list[dict]:
    wait_for(browser, lambda d: path_sections(d, title_part), SLOW_DEADLINE,
             f"a path section with {title_part!r}")
    return path_sections(browser, title_part)


def click(browser, css: str) -> None:
    """Click the element once it is there; the inspector redraws as the chat
    changes, so an element found before may be gone: find it again."""
    def clicked(driver) -> bool:
        try:
            driver.find_element(By.CSS_SELECTOR, css).click()
            return True
        except (NoSuchElementException, StaleElementReferenceException,
                ElementNotInteractableException):   # not shown yet
            return False
    wait_for(browser, clicked, SLOW_DEADLINE, f"a click on {css}")


def test_redeliver_and_follow_an_updates_path(browser, tmp_path):
    with running_server(tmp_path, BOTSVC_TEST_TOOLS=1, BOTSVC_WEBHOOK_ALLOW_PRIVATE=1) as server:
        created = operator(server, "createBot", username="replay_bot")
        bot = Bot(server.base_url, created["token"])
        bot_id = created["bot"]["id"]
        user_id = operator(server, "createUser", display_name="Ada")["user_id"]
        chat_id = operator(server, "userStart", user_id=user_id, bot_id=bot_id)["chat_id"]
        said = operator(server, "userSendMessage", user_id=user_id, bot_id=bot_id, text="ping")
        update = bot.next_update("message")
        while update["message"]["message_id"] != said["message_id"]:
            update = bot.next_update("message")
        reply = bot.call("sendMessage", chat_id=chat_id, text="pong")

        browser.get(f"{server.base_url}/sandbox/")
        sign_in(browser, server.base_url, server.admin_token)
        shown(browser, "#user-select, .new-user", SLOW_DEADLINE)
        browser.get(f"{server.base_url}/sandbox/chats/{user_id}/{bot_id}")
        message, _ = shown(browser, f"#msg-{said['message_id']} .text", SLOW_DEADLINE)
        message.click()

        the_path_shows_the_delivery_and_the_reply(browser, update)
        again = redeliver_is_polled_again_and_listed_as_a_replay(browser, bot, chat_id, update)
        the_reply_leads_back_to_the_update(browser, reply, update)
        the_call_list_opens_a_path_and_resends_a_call(browser, again)
        the_resent_call_is_marked_as_one(browser, server, bot_id)
        a_webhook_attempt_is_redelivered(browser, server, bot, user_id, bot_id)
        errors = [e for e in browser.get_log("browser") if e["level"] == "SEVERE"]
        assert errors == []


def the_path_shows_the_delivery_and_the_reply(browser, update: dict) -> None:
    """The path of the user's message: delivered by getUpdates, the reply after it."""
    [section] = path_section(browser, f"The path of update {update['update_id']}")
    assert section["by"] == "getUpdates"
    assert section["delivery"].startswith("Delivered by getUpdates")
    [reaction] = section["calls"]
    assert "sendMessage" in reaction


def redeliver_is_polled_again_and_listed_as_a_replay(browser, bot: Bot, chat_id: str,
                                                     update: dict) -> dict:
    """Redeliver: the bot polls it again under a new update_id; the path
    lists the replay, with its own path. The update polled again."""
    click(browser, "#inspector-body .path-section .path-redeliver")
    again = bot.next_update("message")
    assert again["update_id"] > update["update_id"]
    assert again["message"] == update["message"]
    answer = bot.call("sendMessage", chat_id=chat_id, text="pong again")
    assert answer["text"] == "pong again"
    shown(browser, "#inspector-body .path-replay", SLOW_DEADLINE)
    assert browser.execute_script(
        "return document.querySelector('#inspector-body .path-replay').textContent"
    ).startswith(str(again["update_id"]))
    click(browser, "#inspector-body .path-replay")
    path_section(browser, f"a replay of {update['update_id']}")
    wait_for(browser, lambda d: any("sendMessage" in c for s in path_sections(
        d, "a replay of") for c in s["calls"]), SLOW_DEADLINE, "the reply to the replay")
    return again


def the_reply_leads_back_to_the_update(browser, reply: dict, update: dict) -> None:
    """Back from the bot's reply to the update it answered."""
    click(browser, f"#msg-{reply['message_id']} .text")
    path_section(browser, f"The path of update {update['update_id']}")
    wait_for(browser, lambda d: any(c.endswith("this call") for s in path_sections(
        d, "The path of update") for c in s["calls"]), SLOW_DEADLINE, "the reply, marked")


def the_call_list_opens_a_path_and_resends_a_call(browser, again: dict) -> None:
    """From the call list: the path of the second reply, then Re-send it."""
    newest = "#feed li.call[data-method='sendMessage']"   # the list is newest first
    wait_for(browser, lambda d: len(d.find_elements(By.CSS_SELECTOR, newest)) == 2,
             SLOW_DEADLINE, "both replies in the call list")
    click(browser, f"{newest} .call-path")
    path_section(browser, f"The path of update {again['update_id']}")
    click(browser, f"{newest} .call-resend")
    wait_for(browser, lambda d: any(t.text == "Re-sent sendMessage: HTTP 200" for t in
                                    d.find_elements(By.CSS_SELECTOR, ".toast")),
             SLOW_DEADLINE, "the re-send's toast")
    wait_for(browser, lambda d: len([m for m in d.find_elements(
        By.CSS_SELECTOR, ".message-list .text") if m.text == "pong again"]) == 2,
        SLOW_DEADLINE, "the re-sent message in the chat")


def the_resent_call_is_marked_as_one(browser, server, bot_id: int) -> None:
    """The re-sent call is marked as one (getBotCalls' detail resent_from),
    in the call list and in the inspector of the message it sent."""
    calls = operator(server, "getBotCalls", bot_id=bot_id, method="sendMessage")["calls"]
    mark = f"re-send of call {min(c['call_id'] for c in calls if c['params']['text'] == 'pong again')}"
    resent = "#feed li.call[data-method='sendMessage'] .resent-pill"
    wait_for(browser, lambda d: [e.text for e in d.find_elements(By.CSS_SELECTOR, resent)]
             == [mark], SLOW_DEADLINE, "the re-send marked in the call list")
    copies = browser.find_elements(By.CSS_SELECTOR, ".message-list .row")
    newest = [c for c in copies if "pong again" in c.text][-1].get_attribute("id")
    click(browser, f"#{newest} .text")
    wait_for(browser, lambda d: [e.text for e in d.find_elements(
        By.CSS_SELECTOR, "#inspector-body .resent-pill")] == [mark], SLOW_DEADLINE,
        "the re-send marked in the inspector")


def a_webhook_attempt_is_redelivered(browser, server, bot: Bot, user_id: int,
                                     bot_id: int) -> None:
    """Redeliver on a webhook's attempt reaches the receiver again, marked as
    a replay in the list of attempts, whose request and response open."""
    receiver = Receiver(None, statuses(200))
    try:
        bot.call("getUpdates", offset=bot.offset)   # acknowledge what was polled
        bot.call("setWebhook", url=f"http://127.0.0.1:{receiver.port}/hook",
                 secret_token="a-secret-token-of-16")
        hooked = operator(server, "userSendMessage", user_id=user_id, bot_id=bot_id,
                          text="hook me")
        wait_for(browser, lambda d: len(receiver.requests) == 1, SLOW_DEADLINE,
                 "the webhook's delivery")
        [first] = received_ids(receiver)
        click(browser, "#deliveries-box summary")
        click(browser, f"#deliveries li[data-update-id='{first}'] .attempt-redeliver")
        wait_for(browser, lambda d: len(receiver.requests) == 2, SLOW_DEADLINE,
                 "the redelivery")
        replayed = received_ids(receiver)[1]
        assert replayed > first
        wait_for(browser, lambda d: d.execute_script(
            f"const li = document.querySelector(\"#deliveries li[data-update-id='{replayed}']\");"
            "return li && li.querySelector('.pill') && li.querySelector('.pill').textContent"
        ) == f"replay of {first}", SLOW_DEADLINE, "the attempt marked as a replay")
        click(browser, f"#deliveries li[data-update-id='{replayed}'] .attempt-detail-toggle")
        shown(browser, f"#deliveries li[data-update-id='{replayed}'] .attempt-detail",
              SLOW_DEADLINE)
        assert hooked["text"] == "hook me"
    finally:
        receiver.close()
