"""scripts/bench sandbox: the sandbox's chat at 10,000 messages beside the same
chat at 10, in the same run, in Debian's headless Chromium against the real
server (gunicorn, 2 workers).

- opening the chat: from the navigation's start to the newest message drawn,
  a chat of 10 messages and one of 10,000 opened in turns (ABBA), medians;
- what a poll costs in bytes: unchanged, one new message, the first view (the
  newest page), beside the whole history (what every poll re-sent when the
  chat changed, before the page asked only for changes).

The two chats are built through the domain's own send, in one transaction
each (10,000 API calls would take minutes and measure nothing more).
"""
from __future__ import annotations

import time
from pathlib import Path

import requests

from botsvc.config import DATABASE_FILE
from botsvc.db import connect, transaction
from botsvc.devkit.servers import running_server
from botsvc.domain import bots, chats, messages
from botsvc.migrations import migrate
from scripts.measure import median

SIZES = (10, 10_000)
ROUNDS = 5


def build(data_dir: Path) -> dict[int, tuple[int, int, str, str]]:
    """A bot and a user per size, the chat filled: size -> (user, bot, chat_id, token)."""
    data_dir.mkdir(parents=True)
    path = str(data_dir / DATABASE_FILE)
    migrate(path)
    conn = connect(path)
    built = {}
    try:
        for size in SIZES:
            bot, token = bots.create_bot(conn, f"bench{size}_bot", display_name=f"Bench {size}")
            user = bots.create_user(conn, f"Reader of {size}")
            chat_id = chats.user_start(conn, bot["id"], user)["chat_id"]
            with transaction(conn):
                row = chats.find_user_chat(conn, bot["id"], user)
                for n in range(size - 1):      # the /start is the first
                    messages.send_message(conn, bot["id"], row, type="text",
                                          content={"text": f"message {n}: " + "lorem " * 8})
            built[size] = (user, bot["id"], chat_id, token)
    finally:
        conn.close()
    return built


def browser():
    from selenium import webdriver
    from selenium.webdriver.chrome.options import Options
    from selenium.webdriver.chrome.service import Service

    options = Options()
    options.binary_location = "/usr/bin/chromium"
    for flag in ("--headless", "--no-sandbox", "--disable-gpu", "--disable-dev-shm-usage",
                 "--window-size=1440,900"):
        options.add_argument(flag)
    return webdriver.Chrome(options=options, service=Service("/usr/bin/chromedriver"))


def open_ms(driver, url: str, newest: int) -> float:
    """Milliseconds from the navigation's start to message ``newest`` drawn."""
    driver.get(url)
    deadline = time.monotonic() + 30
    while time.monotonic() < deadline:
        at = driver.execute_script(
            f"return document.getElementById('msg-{newest}') ? performance.now() : null")
        if at is not None:
            return at
    raise SystemExit(f"message {newest} not drawn within 30 s at {url}")


def run(tmp: Path) -> None:
    from selenium.webdriver.common.by import By


    built = build(tmp / "server-data")
    with running_server(tmp) as server:
        driver = browser()
        try:
            driver.get(f"{server.base_url}/sandbox/signin")
            driver.find_element(By.ID, "token").send_keys(server.admin_token)
            driver.find_element(By.CSS_SELECTOR, "form button[type=submit]").click()
            time.sleep(1)
            urls = {size: f"{server.base_url}/sandbox/chats/{user}/{bot}"
                    for size, (user, bot, _, _) in built.items()}
            times: dict[int, list[float]] = {size: [] for size in SIZES}
            for round_ in range(ROUNDS):
                order = SIZES if round_ % 2 == 0 else SIZES[::-1]
                for size in order:
                    times[size].append(open_ms(driver, urls[size], size))
            small, large = (median(times[size]) for size in SIZES)
            print("sandbox: opening a chat (navigation start to the newest message drawn),"
                  f" medians of {ROUNDS} rounds")
            print(f"  {SIZES[0]:>6} messages   {small:7.0f} ms   (baseline)")
            print(f"  {SIZES[1]:>6} messages   {large:7.0f} ms   {large / small:.2f}x"
                  "   (aim: under 1000 ms)")
            poll_bytes(driver, server, built[SIZES[1]])
        finally:
            driver.quit()


def poll_bytes(driver, server, chat: tuple[int, int, str, str]) -> None:
    """Bytes of the state answers, read with the browser's session cookie."""
    user, bot, chat_id, token = chat
    session = requests.Session()
    for cookie in driver.get_cookies():
        session.cookies.set(cookie["name"], cookie["value"])
    state = f"{server.base_url}/sandbox/chats/{user}/{bot}/state"
    first = session.get(state)
    version = first.json()["result"]["version"]
    unchanged = session.get(state, params={"since": version})
    requests.post(f"{server.base_url}/v2/sendMessage", json={"chat_id": chat_id, "text": "new"},
                  headers={"Authorization": f"Bearer {token}"}).raise_for_status()
    one_new = session.get(state, params={"since": version})
    whole, before = 0, None
    while True:   # the whole history, page by page, as userGetChat gives it
        params = {"user_id": user, "bot_id": bot, "limit": 1000}
        if before:
            params["before_message_id"] = before
        page = requests.post(f"{server.base_url}/manage/v1/userGetChat", json=params,
                             headers={"Authorization": f"Bearer {server.admin_token}"})
        whole += len(page.content)
        result = page.json()["result"]
        if not result["has_more"]:
            break
        before = result["messages"][0]["message_id"]
    print("sandbox: bytes of a state poll of the 10,000-message chat")
    print(f"  unchanged            {len(unchanged.content):>9} B")
    print(f"  one new message      {len(one_new.content):>9} B")
    print(f"  first view (a page)  {len(first.content):>9} B")
    print(f"  whole history        {whole:>9} B   (what a changed poll re-sent before)")
