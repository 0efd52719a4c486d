"""'Export as test' in a real browser (Debian's headless Chromium through
Selenium, against a real server): a person signs in, presses Start with a
parameter and talks to the example bot on the chat page, exports the chat
(the transcript, a part of it from a chosen message, then the whole chat as
a pytest module), downloads the module, and pytest runs it green on the
plugin against a fresh installation."""
from __future__ import annotations

import threading
import time

import pytest
from selenium.webdriver.common.by import By
from selenium.webdriver.support.ui import Select, WebDriverWait

from botsvc.devkit.servers import running_server
from botsvc.testkit.harness import Botsvc
from tests.export.hostile import CORPUS
from tests.export.promo_bot import PromoBot
from tests.export.test_round_trip import CONFTEST, run_inner_pytest
from tests.sandbox import test_sandbox_browser as walk

pytestmark = [pytest.mark.server, pytest.mark.browser]

browser = walk.browser   # the same headless Chromium as the sandbox's browser tests
DEADLINE = 15.0


def wait_for(driver, condition, what: str):
    return WebDriverWait(driver, DEADLINE, poll_frequency=0.05).until(
        lambda d: condition(d), message=f"{what} not within {DEADLINE} s")


def bubble_with(driver, text: str):
    return wait_for(driver, lambda d: [e for e in d.find_elements(
        By.CSS_SELECTOR, "#messages .row .text") if e.text == text], f"the message {text!r}")


def export(driver, start_from: str, format: str) -> str:
    """Choose the part and the format in the open dialog; the file's text."""
    Select(driver.find_element(By.ID, "export-from")).select_by_visible_text(start_from)
    Select(driver.find_element(By.ID, "export-format")).select_by_value(format)
    driver.execute_script("document.getElementById('export-output').textContent = ''")
    driver.find_element(By.ID, "export-run").click()
    return wait_for(driver, lambda d: d.find_element(By.ID, "export-output")
                    .get_attribute("textContent"), "the exported file")


def hostile_chat_as_the_page_shows_it(browser, server, botsvc, bot) -> None:
    """Another user's chat holding the hostile corpus, said by the user and
    sent by the bot: the page's file is the API's, character for character."""
    eve = botsvc.new_user(bot, "Eve")
    user_id, chat_id = eve.user_id, eve.start()
    for text in CORPUS:
        eve.say(text)
        bot.api.call("sendMessage", chat_id=chat_id, text=text)
    eve.wait_for_message(f"You said: {CORPUS[-1]}")   # the example bot's echoes are all in
    browser.get(f"{server.base_url}/sandbox/chats/{user_id}/{bot.id}")
    wait_for(browser, lambda d: d.find_element(By.ID, "btn-export").is_displayed(),
             "the chat page")
    browser.find_element(By.ID, "btn-export").click()
    for format in ("pytest", "transcript"):
        shown = export(browser, "the whole chat", format)
        exported = botsvc.operator.call("exportChat", user_id=user_id, bot_id=bot.id,
                                        format=format)["content"]
        assert shown == exported


def test_a_chat_exported_from_the_page_runs_as_a_test(browser, tmp_path):
    downloads = tmp_path / "downloads"
    downloads.mkdir()
    browser.execute_cdp_cmd("Browser.setDownloadBehavior",
                            {"behavior": "allow", "downloadPath": str(downloads)})
    with running_server(tmp_path, BOTSVC_TEST_TOOLS=1) as server:
        botsvc = Botsvc(server.base_url, server.admin_token)
        bot = botsvc.new_bot()
        user_id = botsvc.operator.create_user("Ada")
        promo, stop = PromoBot(bot.base_url, bot.token), threading.Event()
        thread = threading.Thread(target=promo.run, args=(stop,), daemon=True)
        thread.start()
        try:
            browser.get(f"{server.base_url}/sandbox/")
            browser.find_element(By.ID, "token").send_keys(server.admin_token)
            browser.find_element(By.CSS_SELECTOR, "form button[type=submit]").click()
            wait_for(browser, lambda d: "/signin" not in d.current_url, "signing in")
            browser.get(f"{server.base_url}/sandbox/chats/{user_id}/{bot.id}")
            wait_for(browser, lambda d: d.find_element(By.ID, "btn-start").is_displayed(),
                     "the Start button")
            browser.find_element(By.ID, "start-param").send_keys("promo")
            browser.find_element(By.ID, "btn-start").click()
            bubble_with(browser, "Welcome (promo)")
            browser.find_element(By.ID, "composer-text").send_keys("hello")
            browser.find_element(By.ID, "composer-send").click()
            bubble_with(browser, "You said: hello")

            browser.find_element(By.ID, "btn-export").click()
            transcript = export(browser, "the whole chat", "transcript")
            assert '"format": "botsvc-transcript/1"' in transcript
            part = export(browser, "after the bot's “Welcome (promo)”", "pytest")
            # The part replays the chat from its Start first (a lead-in, not checked).
            assert ("    user.start('promo')\n    user.skip_reactions(1)\n\n    user.say('hello')\n"
                    "    user.expect_message('You said: hello')\n") in part
            module = export(browser, "the whole chat", "pytest")
            assert "    user.start('promo')\n" in module
            assert "    user.say('hello')\n    user.expect_message('You said: hello')\n" in module
            name = browser.find_element(By.ID, "export-file-name").text
            browser.find_element(By.ID, "export-download").click()
            deadline = time.monotonic() + DEADLINE
            while not (downloads / name).exists() and time.monotonic() < deadline:
                time.sleep(0.1)
            assert (downloads / name).read_text() == module
            hostile_chat_as_the_page_shows_it(browser, server, botsvc, bot)
            errors = [e for e in browser.get_log("browser") if e["level"] == "SEVERE"]
            assert errors == []
        finally:
            stop.set()
            thread.join(timeout=30)
    (downloads / "conftest.py").write_text(CONFTEST)
    run = run_inner_pytest(downloads, {})
    assert run.returncode == 0, run.stdout + run.stderr
    assert "1 passed" in run.stdout
