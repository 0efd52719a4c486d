"""Who may use the sandbox: it exists only with an admin token; one sign-in
with that token gives a session cookie; wrong tokens are slowed down; every
change carries the session's CSRF token; signing out, or a new admin token,
ends the session."""
from __future__ import annotations

from urllib.parse import quote

import pytest

from botsvc.config import Settings
from botsvc.domain import signin_throttle as throttle
from botsvc.factory import create_app
from tests.sandbox.sandbox_client import FORM_TOKEN, Person
from tests.support.contract import ADMIN_TOKEN, NO_RATE_LIMITS, assert_failure

ROUTES = [("GET", "/sandbox/"), ("GET", "/sandbox/signin"), ("POST", "/sandbox/signin"),
          ("POST", "/sandbox/signout"), ("GET", "/sandbox/bots"), ("GET", "/sandbox/chats"),
          ("GET", "/sandbox/chats/1/1"), ("GET", "/sandbox/chats/1/1/state"),
          ("GET", "/sandbox/chats/1/1/history"), ("GET", "/sandbox/chats/1/1/inspect"),
          ("POST", "/sandbox/chats/1/1/read"), ("GET", "/sandbox/users/1/chats"),
          ("GET", "/sandbox/bots/1"), ("GET", "/sandbox/bots/1/pulse"),
          ("POST", "/sandbox/api/createUser"), ("GET", "/sandbox/static/sandbox.css"),
          ("GET", "/sandbox/static/chat.js"), ("GET", "/sandbox/media/1/1/1/" + "a" * 48)]


@pytest.mark.parametrize("method, path", ROUTES)
def test_no_sandbox_without_an_admin_token(make_app, method, path):
    client = make_app(admin_token=None).test_client()
    response = client.open(path, method=method)
    unknown = client.open("/no/such/path", method=method)
    assert response.status_code == 404
    assert response.get_json() == unknown.get_json()
    # Alike but for the request id, which every answer has its own of.
    headers, unknown_headers = dict(response.headers), dict(unknown.headers)
    assert headers.pop("X-Request-Id") != unknown_headers.pop("X-Request-Id")
    assert headers == unknown_headers


@pytest.mark.parametrize("method, path", [r for r in ROUTES if "static" not in r[1]
                                          and r[1] != "/sandbox/signin"])
def test_signed_out_pages_lead_to_the_sign_in(client, method, path):
    response = client.open(path, method=method)
    if path.startswith(("/sandbox/chats/1/1/", "/sandbox/users/", "/sandbox/bots/1/pulse",
                        "/sandbox/api/", "/sandbox/media/")):
        assert_failure(response, 401, "UNAUTHORIZED")
    else:
        assert response.status_code == 302
        # A page comes back once signed in; a change (a POST) does not.
        assert response.headers["Location"] == ("/sandbox/signin" if method != "GET"
                                                or path == "/sandbox/" else
                                                "/sandbox/signin?next=" + quote(path, safe="/"))


@pytest.mark.parametrize("wanted, landing", [
    ("/sandbox/chats/3/4?x=1", "/sandbox/chats/3/4?x=1"),
    ("/sandbox/bots/2", "/sandbox/bots/2"),
    ("//evil.example/sandbox/", "/sandbox/"),
    ("https://evil.example/sandbox/", "/sandbox/"),
    ("/sandbox/\\evil.example", "/sandbox/"),
    ("/elsewhere", "/sandbox/"),
])
def test_sign_in_returns_to_the_page_the_person_was_on(client, wanted, landing):
    form = client.get("/sandbox/signin", query_string={"next": wanted})
    assert ('name="next"' in form.text) == (landing != "/sandbox/")
    response = client.post("/sandbox/signin", data={
        "csrf_token": FORM_TOKEN.search(form.text).group(1), "token": ADMIN_TOKEN,
        "next": wanted})
    assert response.status_code == 303 and response.headers["Location"] == landing


def test_sign_in_sets_a_strict_session_cookie(client):
    response = Person(client).sign_in()
    assert response.status_code == 303 and response.headers["Location"] == "/sandbox/"
    [cookie] = [c for c in response.headers.getlist("Set-Cookie")
                if c.startswith("botsvc_sandbox=")]
    attributes = [part.strip() for part in cookie.split(";")]
    assert {"HttpOnly", "SameSite=Strict", "Path=/sandbox/"} <= set(attributes)
    assert "Secure" not in attributes
    assert ADMIN_TOKEN not in cookie
    assert client.get("/sandbox/chats").status_code == 200


def test_the_cookie_is_secure_behind_https(make_app):
    client = make_app(base_url="https://bots.example.org").test_client()
    response = Person(client).sign_in()
    cookies = response.headers.getlist("Set-Cookie")
    assert all("Secure" in c.split("; ") for c in cookies if c.startswith("botsvc_sandbox="))


def test_a_wrong_token_gets_a_clear_message(client):
    response = Person(client).sign_in("not-it")
    assert response.status_code == 401
    assert "That is not the admin token" in response.text
    assert "not-it" not in response.text
    assert client.get("/sandbox/chats").status_code == 302


def test_sign_in_needs_its_form_token(client):
    client.get("/sandbox/signin")
    refused = client.post("/sandbox/signin", data={"token": ADMIN_TOKEN})
    assert refused.status_code == 403 and "expired" in refused.text
    forged = client.post("/sandbox/signin", data={"token": ADMIN_TOKEN, "csrf_token": "x" * 43})
    assert forged.status_code == 403
    assert client.get("/sandbox/chats").status_code == 302


def test_an_empty_token_is_asked_for(client):
    form = client.get("/sandbox/signin")
    response = client.post("/sandbox/signin", data={
        "csrf_token": FORM_TOKEN.search(form.text).group(1), "token": ""})
    assert response.status_code == 400 and "Enter the admin token" in response.text


def test_repeated_wrong_tokens_are_slowed_down(client, clock):
    person = Person(client)
    for _ in range(throttle.FREE_FAILURES):
        assert person.sign_in("wrong").status_code == 401
    assert person.sign_in("wrong").status_code == 401   # the 6th: now wait 1 s
    refused = person.sign_in(ADMIN_TOKEN)                # even the right one is not looked at
    assert refused.status_code == 429 and refused.headers["Retry-After"] == "1"
    assert "Too many wrong tokens" in refused.text
    clock.now += 1
    assert person.sign_in("wrong").status_code == 401   # the 7th: wait 2 s
    clock.now += 1
    assert person.sign_in(ADMIN_TOKEN).headers["Retry-After"] == "1"
    clock.now += 1
    assert person.sign_in(ADMIN_TOKEN).status_code == 303
    # Success forgets the failures: five more are free again.
    other = Person(client.application.test_client())
    for _ in range(throttle.FREE_FAILURES):
        assert other.sign_in("wrong").status_code == 401


def test_waits_double_up_to_a_cap_and_are_forgotten():
    assert [throttle.wait_after(n) for n in range(1, 10)] == [0, 0, 0, 0, 0, 1, 2, 4, 8]
    assert throttle.wait_after(100) == throttle.MAX_WAIT_SECONDS == 900


def test_the_throttle_is_shared_by_every_process(make_app, tmp_path, clock):
    """Two apps on one data dir (two workers): failures counted by one hold
    back sign-ins at the other."""
    first, second = make_app().test_client(), make_app().test_client()
    for _ in range(throttle.FREE_FAILURES + 1):
        Person(first).sign_in("wrong")
    assert Person(second).sign_in(ADMIN_TOKEN).status_code == 429


@pytest.mark.parametrize("address, key", [
    ("203.0.113.7", "203.0.113.7"), ("::ffff:203.0.113.7", "203.0.113.7"),
    ("2001:db8:1:2:3:4:5:6", "2001:db8:1:2::/64"), ("2001:db8:1:2::9", "2001:db8:1:2::/64"),
])
def test_an_ipv6_host_is_throttled_as_its_64(address, key):
    assert throttle.client_key(address) == key


def test_changes_need_the_csrf_token(person):
    person.csrf, real = None, person.csrf
    assert_failure(person.call("createUser"), 403, "CSRF_FAILED")
    person.csrf = real[:-1] + ("A" if real[-1] != "A" else "B")
    assert_failure(person.call("createUser"), 403, "CSRF_FAILED")
    signout = person.client.post("/sandbox/signout")
    assert_failure(signout, 403, "CSRF_FAILED")
    person.csrf = real
    assert person.ok("createUser") == {"user_id": 1}


def test_sign_out_ends_the_session_everywhere(person):
    cookie = person.client.get_cookie("botsvc_sandbox", path="/sandbox/").value
    response = person.client.post("/sandbox/signout", data={"csrf_token": person.csrf})
    assert response.status_code == 303
    assert response.headers["Location"] == "/sandbox/signin?signed_out=1"
    assert person.client.get("/sandbox/chats").status_code == 302
    # The old cookie, replayed from a copy, is dead too.
    person.client.set_cookie("botsvc_sandbox", cookie, path="/sandbox/")
    assert person.client.get("/sandbox/chats").status_code == 302
    assert "You are signed out." in person.client.get("/sandbox/signin?signed_out=1").text


def test_a_new_admin_token_ends_every_session(tmp_path, person):
    settings = person.client.application.config["SETTINGS"]
    cookie = person.client.get_cookie("botsvc_sandbox", path="/sandbox/").value
    changed = create_app(Settings.from_env({}, data_dir=settings.data_dir,
                                           admin_token="a-new-token", **NO_RATE_LIMITS))
    client = changed.test_client()
    client.set_cookie("botsvc_sandbox", cookie, path="/sandbox/")
    assert client.get("/sandbox/chats").status_code == 302
    assert Person(client).sign_in("a-new-token").status_code == 303


def test_signed_in_the_sign_in_page_leads_home(person):
    response = person.client.get("/sandbox/signin")
    assert response.status_code == 303 and response.headers["Location"] == "/sandbox/"
