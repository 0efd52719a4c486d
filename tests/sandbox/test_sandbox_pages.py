"""The sandbox's pages: what they show, that every text a bot or a user chose
stays text, that no token ever appears in a page or a URL, and the headers
that keep a browser strict (CSP without inline code, no framing, no referrer,
no caching)."""
from __future__ import annotations

import re

import pytest

from botsvc.devkit.paths import REPO
from botsvc.sandbox import CSP
from tests.support.contract import ADMIN_TOKEN, BotClient

STATIC = REPO / "app" / "botsvc" / "sandbox" / "static"
TEMPLATES = REPO / "app" / "botsvc" / "sandbox" / "templates" / "sandbox"
HOSTILE = ['<script>alert(1)</script>', '"><img src=x onerror=alert(2)>', "'><svg onload=alert(3)>"]


def pages(person, user_id: int, bot_id: int) -> dict:
    paths = ["/sandbox/bots", "/sandbox/chats", f"/sandbox/chats?user={user_id}",
             f"/sandbox/chats/{user_id}/{bot_id}"]
    return {path: person.page(path) for path in paths}


@pytest.fixture
def hostile_world(person, client):
    """A bot, a user and a chat whose every name and text is hostile markup."""
    created = person.ok("createBot", username="evil_bot", display_name=HOSTILE[0],
                        description=HOSTILE[1])
    bot = BotClient(client, created["bot"], created["token"])
    user_id = person.ok("createUser", display_name=HOSTILE[1])["user_id"]
    chat_id = person.ok("userStart", user_id=user_id, bot_id=bot.id)["chat_id"]
    bot.ok("sendMessage", chat_id=chat_id, text="\n".join(HOSTILE))
    return bot, user_id, chat_id


def test_hostile_names_and_texts_are_escaped(person, hostile_world):
    bot, user_id, _ = hostile_world
    for path, response in pages(person, user_id, bot.id).items():
        assert response.status_code == 200, path
        for text in HOSTILE:
            assert text not in response.text, (path, text)
        assert "<script>" not in response.text.replace('<script src="', "")
    bots_page = person.page("/sandbox/bots").text
    assert "&lt;script&gt;alert(1)&lt;/script&gt;" in bots_page
    assert "&#34;&gt;&lt;img src=x onerror=alert(2)&gt;" in bots_page
    sidebar = person.page(f"/sandbox/chats?user={user_id}").text
    assert "&#39;&gt;&lt;svg onload=alert(3)&gt;" in sidebar   # the last message's preview


def test_the_chat_state_carries_the_text_exactly(person, hostile_world):
    bot, user_id, _ = hostile_world
    state = person.state(user_id, bot.id)
    assert state["chat"]["messages"][-1]["text"] == "\n".join(HOSTILE)


def test_no_token_in_any_page_or_url(person, hostile_world):
    bot, user_id, _ = hostile_world
    rotated = person.ok("rotateToken", bot_id=bot.id)["token"]
    for path, response in pages(person, user_id, bot.id).items():
        for token in (bot.token, rotated, ADMIN_TOKEN):
            assert token not in response.text, path
        for url in re.findall(r'(?:href|src|action|content)="([^"]*)"', response.text):
            assert ":" not in url.split("?")[0].lstrip("/") or url.startswith("https://"), url
    state = person.state(user_id, bot.id)
    assert rotated not in str(state) and ADMIN_TOKEN not in str(state)


@pytest.mark.parametrize("path", ["/sandbox/bots", "/sandbox/chats", "/sandbox/chats/1/1",
                                  "/sandbox/chats/1/1/state", "/sandbox/signin"])
def test_security_headers(person, hostile_world, path):
    signed_out = person.client.application.test_client()
    response = (signed_out if path == "/sandbox/signin" else person.client).get(path)
    assert response.status_code == 200, path
    policy = dict(part.strip().split(" ", 1) for part in
                  response.headers["Content-Security-Policy"].split(";"))
    assert policy["default-src"] == "'none'"
    assert policy["script-src"] == "'self'" and policy["style-src"] == "'self'"
    assert policy["object-src"] == "'none'" and policy["base-uri"] == "'none'"
    assert policy["frame-ancestors"] == "'none'" and policy["form-action"] == "'self'"
    assert response.headers["X-Frame-Options"] == "DENY"
    assert response.headers["Referrer-Policy"] == "no-referrer"
    assert response.headers["X-Content-Type-Options"] == "nosniff"
    assert response.headers["Cache-Control"] == "no-store"


@pytest.mark.parametrize("method, path", [
    ("GET", "/sandbox/no/such/page"), ("POST", "/sandbox/no/such/page"),
    ("GET", "/sandbox/static/no-such.css"), ("GET", "/sandbox/chats/x/y"),
    ("GET", "/sandbox"), ("DELETE", "/sandbox/bots")])
def test_security_headers_on_every_sandbox_answer(person, method, path):
    for client in (person.client, person.client.application.test_client()):   # in, out
        response = client.open(path, method=method)
        assert response.status_code in (308, 404, 405), (path, response.status_code)
        assert response.headers["Content-Security-Policy"] == CSP, path
        assert response.headers["X-Frame-Options"] == "DENY"
        assert response.headers["Referrer-Policy"] == "no-referrer"
        assert response.headers["X-Content-Type-Options"] == "nosniff"
        assert response.headers["Cache-Control"] == ("no-cache" if "/static/" in path
                                                     else "no-store")
    # Elsewhere, no sandbox headers.
    assert "X-Frame-Options" not in person.client.get("/no/such/page").headers


def test_static_files_are_served_with_the_policy(client):
    for name in ("sandbox.css", "common.js", "chat.js", "icon.svg"):
        response = client.get(f"/sandbox/static/{name}")
        assert response.status_code == 200
        assert response.headers["Content-Security-Policy"] == CSP
        assert response.headers["X-Content-Type-Options"] == "nosniff"


def test_templates_hold_no_inline_script_or_style():
    for template in TEMPLATES.glob("*.html"):
        html = template.read_text()
        assert not re.search(r"<script(?![^>]*\bsrc=)", html), template.name
        assert not re.search(r"\sstyle\s*=|<style|\son[a-z]+\s*=", html, re.I), template.name


def test_scripts_never_write_markup():
    for script in STATIC.glob("*.js"):
        code = script.read_text()
        for sink in ("innerHTML", "outerHTML", "insertAdjacentHTML", "document.write", "eval(",
                     "setAttribute(\"style\"", ".style."):
            assert sink not in code, (script.name, sink)


def test_the_bot_manager_shows_each_bots_vital_signs(person, client, hostile_world):
    bot, user_id, chat_id = hostile_world
    bot.ok("createBroadcast", method="sendMessage", payload={"text": "hi all"})
    page = person.page("/sandbox/bots").text
    assert "evil_bot" in page and "id 1" in page
    assert re.search(r"<dt>Subscribers</dt><dd>1</dd>", page)
    assert re.search(r"<dt>Pending updates</dt><dd>1</dd>", page)   # the Start
    assert "polling (getUpdates)" in page
    assert "sendMessage" in page and re.search(r'<span class="pill (queued|running|completed)">', page)
    assert re.search(r"<progress max=\"1\" value=\"[01]\"></progress>", page)
    person.ok("setBotDisabled", bot_id=bot.id, disabled=True)
    assert '<span class="pill warn">disabled</span>' in person.page("/sandbox/bots").text
    person.ok("setPlatformDisabled", disabled=True)
    assert "Platform disabled" in person.page("/sandbox/chats").text
    bot.error("getMe", 503, "PLATFORM_DISABLED")


def test_the_messenger_lists_users_and_their_chats(person):
    assert "Add a user" in person.page("/sandbox/chats").text
    first = person.ok("createUser", display_name="Ada")["user_id"]
    second = person.ok("createUser", display_name="Grace")["user_id"]
    bot_id = person.ok("createBot", username="chatty_bot")["bot"]["id"]
    person.ok("userStart", user_id=second, bot_id=bot_id)
    page = person.page(f"/sandbox/chats?user={second}").text
    assert f'<option value="{second}" selected>Grace · #{second}</option>' in page
    assert f'<option value="{first}">Ada · #{first}</option>' in page
    assert f'href="/sandbox/chats/{second}/{bot_id}"' in page and "/start" in page
    first_view = person.page(f"/sandbox/chats?user={first}").text
    assert "<em>not started</em>" in first_view
    chat = person.page(f"/sandbox/chats/{second}/{bot_id}")
    assert chat.status_code == 200 and 'data-state="active"' in chat.text
    assert person.page(f"/sandbox/chats/{second}/999").status_code == 404
    assert person.page(f"/sandbox/chats/999/{bot_id}").status_code == 404


def test_the_webhook_and_its_last_error(person, client, db):
    created = person.ok("createBot", username="hooked_bot")
    bot = BotClient(client, created["bot"], created["token"])
    bot.ok("setWebhook", url="https://hooks.botsvc-test.net/in?x=<b>",
           secret_token="s" * 16)
    with db:
        db.execute("UPDATE webhooks SET last_error = 'HTTP 500 <i>', last_error_at = 1,"
                   " last_success_at = 2")
    page = person.page("/sandbox/bots").text
    assert "https://hooks.botsvc-test.net/in?x=&lt;b&gt;" in page
    assert "HTTP 500 &lt;i&gt;" in page and "Last delivery" in page
    assert "s" * 16 not in page


def test_chat_with_it_opens_that_bots_chat(person):
    bot_id = person.ok("createBot", username="opened_bot")["bot"]["id"]
    page = person.page(f"/sandbox/bots/{bot_id}").text
    assert f'id="chat-with-it" href="/sandbox/chats?bot={bot_id}"' in page
    # No user yet: the new user's form opens that bot's chat once made.
    assert f'data-open-bot="{bot_id}"' in person.page(f"/sandbox/chats?bot={bot_id}").text
    user = person.ok("createUser", display_name="Ada")["user_id"]
    response = person.client.get(f"/sandbox/chats?bot={bot_id}")
    assert response.status_code == 302
    assert response.headers["Location"] == f"/sandbox/chats/{user}/{bot_id}"
    assert person.client.get("/sandbox/chats?bot=999").status_code == 200   # no such bot


def test_the_sidebar_preview_is_bounded(person, client):
    created = person.ok("createBot", username="long_bot")
    bot = BotClient(client, created["bot"], created["token"])
    user = person.ok("createUser")["user_id"]
    chat_id = person.ok("userStart", user_id=user, bot_id=bot.id)["chat_id"]
    bot.ok("sendMessage", chat_id=chat_id, text="\u05e9" * 4000)   # 8,000 bytes of Hebrew
    response = person.client.get(f"/sandbox/users/{user}/chats")
    [entry] = response.get_json()["result"]["entries"]
    assert entry["preview"] == "\u05e9" * 119 + "\u2026"
    page = person.page(f"/sandbox/chats?user={user}").text
    assert "\u05e9" * 120 not in page and "\u05e9" * 119 + "\u2026" in page


def test_pages_carry_the_service_clock(make_app):
    from tests.sandbox.sandbox_client import Person

    someone = Person(make_app(test_tools=True).test_client())
    assert someone.sign_in().status_code == 303
    ahead = someone.ok("advanceClock", seconds=86400)["now"]
    page = someone.page("/sandbox/chats").text
    shown = float(page.split('<meta name="service-now" content="')[1].split('"')[0])
    assert ahead <= shown < ahead + 5
