"""One chat in the sandbox: the state its page polls (a cheap "changed?"
answer until something the user sees changes), the operator methods it calls
(the same rules and errors as /manage/v1), and the media route, which serves
a chat's files to the signed-in person only, and only while the chat shows
them."""
from __future__ import annotations

import pytest

from tests.sandbox.sandbox_client import Person
from tests.support.contract import ADMIN_TOKEN, BotClient, assert_failure, assert_invalid
from tests.support.media_files import EICAR, image_bytes, multipart


@pytest.fixture
def world(person, client):
    """A bot (over /v2), and a user who started it in the sandbox."""
    created = person.ok("createBot", username="shop_bot", display_name="Shop")
    bot = BotClient(client, created["bot"], created["token"])
    user_id = person.ok("createUser", display_name="Ada")["user_id"]
    chat_id = person.ok("userStart", user_id=user_id, bot_id=bot.id,
                        start_parameter="promo")["chat_id"]
    return bot, user_id, chat_id


def test_typing_start_and_stop_in_the_composer(person, world):
    """"/start PARAM" and "/stop" typed in the composer act as on /manage/v1."""
    bot, _, _ = world
    newcomer = person.ok("createUser")["user_id"]
    sent = person.ok("userSendMessage", user_id=newcomer, bot_id=bot.id, text="/start ref_7")
    assert sent["text"] == "/start ref_7"
    assert person.state(newcomer, bot.id)["membership"] == "active"
    assert bot.ok("getUpdates")[-1]["membership"]["start_parameter"] == "ref_7"
    person.ok("userSendMessage", user_id=newcomer, bot_id=bot.id, text="/stop")
    assert person.state(newcomer, bot.id)["membership"] == "stopped"


def test_unknown_user_or_bot_in_the_state(person, world):
    bot, user_id, _ = world
    assert_invalid(person.client.get(f"/sandbox/chats/999/{bot.id}/state"), "user_id")
    assert_invalid(person.client.get(f"/sandbox/chats/{user_id}/999/state"), "bot_id")


@pytest.mark.parametrize("method, params", [
    ("userSendMessage", {"text": ""}),
    ("userSendMessage", {"text": "x" * 16385}),
    ("userStart", {"start_parameter": "has space"}),
    ("userClickButton", {"message_id": 1, "callback_data": "nope"}),
    ("userSendMessage", {"text": "hi", "extra": 1}),
])
def test_the_sandbox_answers_as_the_operator_api(person, client, world, method, params):
    """The same schema and handler: the same answer, byte for byte."""
    bot, user_id, _ = world
    params = {"user_id": user_id, "bot_id": bot.id, **params}
    mine = person.call(method, **params)
    theirs = client.post(f"/manage/v1/{method}", json=params,
                         headers={"Authorization": f"Bearer {ADMIN_TOKEN}"})
    assert mine.status_code == theirs.status_code != 200
    assert mine.get_json() == theirs.get_json()


@pytest.mark.parametrize("method", ["reset", "advanceClock", "injectFault", "clearFaults",
                                    "noSuchMethod", "getUpdates", "setWebhook"])
def test_only_the_messengers_methods_are_callable(person, method):
    """The testing tools that change the installation exist only with
    BOTSVC_TEST_TOOLS=1 (off here), in the sandbox as on /manage/v1."""
    assert_failure(person.call(method), 404, "METHOD_NOT_FOUND")


def test_the_clock_and_the_deliveries_are_there_without_the_tools(person, world):
    bot, _, _ = world
    clock = person.ok("getClock")
    assert set(clock) == {"now", "offset"} and clock["offset"] == 0
    assert person.ok("getWebhookDeliveries", bot_id=bot.id) == {"deliveries": [],
                                                                "next_cursor": None}


def test_a_users_file_goes_through_the_upload_pipeline(person, world):
    bot, user_id, _ = world
    response = person.upload(b"plain notes\n", "notes.txt", user_id=user_id, bot_id=bot.id,
                             caption="my notes")
    assert response.status_code == 200, response.get_json()
    message = response.get_json()["result"]
    assert message["type"] == "document" and message["caption"] == "my notes"
    update = bot.ok("getUpdates")[-1]
    assert update["message"]["media"]["file_id"] == message["media"]["file_id"]
    refused = person.upload(EICAR, "eicar.txt", user_id=user_id, bot_id=bot.id)
    assert_failure(refused, 400, "INVALID_PARAMETER", field="file", reason="infected")
    mismatch = person.upload(b"notes\n", "n.txt", user_id=user_id, bot_id=bot.id, type="voice")
    assert_failure(mismatch, 400, "INVALID_PARAMETER", field="file", reason="type_mismatch")


def media_url(user_id, bot_id, message_id, file_id):
    return f"/sandbox/media/{user_id}/{bot_id}/{message_id}/{file_id}"


@pytest.fixture
def photo(world):
    bot, user_id, chat_id = world
    sent = multipart(bot, "sendPhoto", {"photo": (image_bytes("PNG", (64, 48)), "p.png")},
                     chat_id=chat_id).get_json()["result"]
    return sent


def test_the_media_route_serves_a_file_the_chat_shows(person, world, photo):
    bot, user_id, _ = world
    url = media_url(user_id, bot.id, photo["message_id"], photo["media"]["file_id"])
    response = person.client.get(url)
    assert response.status_code == 200
    assert response.headers["Content-Type"] == photo["media"]["mime_type"] == "image/png"
    assert response.headers["X-Content-Type-Options"] == "nosniff"
    assert response.headers["Content-Security-Policy"] == "default-src 'none'; sandbox"
    assert response.headers["X-Frame-Options"] == "DENY"
    assert len(response.data) == photo["media"]["file_size"]
    part = person.client.get(url, headers={"Range": "bytes=0-9"})
    assert part.status_code == 206 and len(part.data) == 10
    assert person.client.head(url).status_code == 200


def test_the_media_route_checks_who_asks_and_what_the_chat_shows(person, client, world, photo):
    bot, user_id, chat_id = world
    file_id, shown_by = photo["media"]["file_id"], photo["message_id"]
    # Signed out: no file, however well the URL is known.
    stranger = client.application.test_client()
    assert_failure(stranger.get(media_url(user_id, bot.id, shown_by, file_id)), 401,
                   "UNAUTHORIZED")
    # Another user's chat with the same bot does not show it.
    other = person.ok("createUser")["user_id"]
    person.ok("userStart", user_id=other, bot_id=bot.id)
    for message_id in (shown_by, shown_by + 1):
        assert_failure(person.client.get(media_url(other, bot.id, message_id, file_id)), 404,
                       "FILE_NOT_FOUND")
    # Another bot's chat with the same user does not either.
    second = person.ok("createBot", username="second_bot")["bot"]["id"]
    person.ok("userStart", user_id=user_id, bot_id=second)
    assert_failure(person.client.get(media_url(user_id, second, 1, file_id)), 404,
                   "FILE_NOT_FOUND")
    # Another message of the chat (the /start) does not show it.
    assert_failure(person.client.get(media_url(user_id, bot.id, 1, file_id)), 404,
                   "FILE_NOT_FOUND")
    # A file of the bot that no message shows; a made-up id.
    uploaded = multipart(bot, "uploadFile", {"file": (b"hidden\n", "h.txt")})
    hidden = uploaded.get_json()["result"]["file_id"]
    for made_up in (hidden, "f" * 48):
        assert_failure(person.client.get(media_url(user_id, bot.id, shown_by, made_up)), 404,
                       "FILE_NOT_FOUND")
    # Once the message is deleted, the file is gone from the chat.
    bot.ok("deleteMessage", chat_id=chat_id, message_id=shown_by)
    assert_failure(person.client.get(media_url(user_id, bot.id, shown_by, file_id)), 404,
                   "FILE_NOT_FOUND")


def test_after_a_media_edit_only_the_new_file_is_served(person, world, photo):
    bot, user_id, chat_id = world
    other = multipart(bot, "uploadFile", {"file": (image_bytes("PNG", (30, 30)), "q.png")})
    new_id = other.get_json()["result"]["file_id"]
    bot.ok("editMessageMedia", chat_id=chat_id, message_id=photo["message_id"], media=new_id)
    old = media_url(user_id, bot.id, photo["message_id"], photo["media"]["file_id"])
    assert_failure(person.client.get(old), 404, "FILE_NOT_FOUND")
    assert person.client.get(media_url(user_id, bot.id, photo["message_id"],
                                       new_id)).status_code == 200


def test_a_new_person_signs_in_to_the_same_chats(client, world):
    bot, user_id, _ = world
    second = Person(client.application.test_client())
    assert second.sign_in().status_code == 303
    assert second.state(user_id, bot.id)["membership"] == "active"
