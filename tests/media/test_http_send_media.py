"""The media send methods over HTTP: file_id and direct multipart upload,
kind rules, refusals, media groups, rates, and broadcasts of media."""
from __future__ import annotations

import pytest

from botsvc.jobs import run_job
from tests.support.contract import Operator, assert_failure, assert_invalid
from tests.support.media_files import KIND_OF, Storage, bot_on, multipart

# method -> (media field and message type, a sample of the right kind)
METHODS = {
    "sendPhoto": ("photo", "photo.jpg"),
    "sendVoice": ("voice", "song.mp3"),
    "sendVideo": ("video", "video.mp4"),
    "sendAudio": ("audio", "tone.wav"),
    "sendDocument": ("document", "doc.pdf"),
    "sendAnimation": ("animation", "anim.gif"),
}
MEDIA_KEYS = {"file_id", "kind", "mime_type", "file_size", "file_name"}
METADATA_KEYS = {"photo": {"width", "height"}, "video": {"width", "height", "duration"},
                 "animation": {"width", "height", "duration"}, "audio": {"duration"},
                 "document": set()}


@pytest.fixture
def upload(bot, samples):
    """uploadFile of a sample by name; returns the File."""
    def run(name: str, as_bot=None):
        response = multipart(as_bot or bot, "uploadFile", {"file": (samples[name], name)})
        assert response.status_code == 200, response.get_json()
        return response.get_json()["result"]
    return run


def assert_media_message(message: dict, type: str, file: dict, chat_id: str,
                         caption: str | None = None) -> None:
    assert message["type"] == type and message["from_bot"] is True
    assert message["chat"] == {"id": chat_id, "type": "private"}
    expected = {key: file[key] for key in MEDIA_KEYS | METADATA_KEYS[file["kind"]]}
    assert message["media"] == expected
    if caption is None:
        assert "caption" not in message
    else:
        assert message["caption"] == caption
    assert "text" not in message and "card" not in message


# -- by file_id -------------------------------------------------------------------

@pytest.mark.parametrize("method", sorted(METHODS))
def test_each_method_sends_a_file_id(bot, chat, upload, operator, method):
    field, sample = METHODS[method]
    file = upload(sample)
    message = bot.ok(method, chat_id=chat.chat_id, **{field: file["file_id"]}, caption="look")
    assert_media_message(message, field, file, chat.chat_id, "look")
    seen = operator("userGetChat", user_id=chat.user_id, bot_id=bot.id)["messages"][-1]
    assert seen == message


@pytest.mark.parametrize("method", sorted(METHODS))
def test_each_method_takes_the_file_itself(bot, chat, samples, storage, method):
    field, sample = METHODS[method]
    response = multipart(bot, method, {field: (samples[sample], sample)},
                         chat_id=chat.chat_id, caption="fresh",
                         reply_markup={"inline_keyboard": [[{"text": "ok",
                                                             "callback_data": "ok"}]]})
    assert response.status_code == 200, response.get_json()
    message = response.get_json()["result"]
    [row] = storage.rows()
    file = bot.ok("getFile", file_id=row["file_id"])
    assert_media_message(message, field, file, chat.chat_id, "fresh")
    assert message["media"]["kind"] == KIND_OF[sample]
    assert message["reply_markup"] == {"inline_keyboard": [[{"text": "ok",
                                                             "callback_data": "ok"}]]}
    assert storage.leftovers() == []


def test_multipart_with_a_file_id_text_value(bot, chat, upload):
    file = upload("photo.png")
    response = multipart(bot, "sendPhoto", {}, chat_id=chat.chat_id, photo=file["file_id"],
                         reply_to_message_id=1)
    assert response.status_code == 200, response.get_json()
    assert response.get_json()["result"]["reply_to_message_id"] == 1


def test_send_document_takes_any_clean_file(bot, chat, upload):
    for sample in ("video.mp4", "song.mp3", "photo.png", "anim.gif", "notes.txt"):
        file = upload(sample)
        message = bot.ok("sendDocument", chat_id=chat.chat_id, document=file["file_id"])
        assert message["type"] == "document" and message["media"]["kind"] == KIND_OF[sample]


# -- the kind must match the method ------------------------------------------------

@pytest.mark.parametrize("method, sample", [
    ("sendVoice", "video.mp4"),
    ("sendAudio", "video.mp4"),
    ("sendAnimation", "video.mp4"),
    ("sendVideo", "anim.gif"),
    ("sendPhoto", "doc.pdf"),
    ("sendPhoto", "video.mp4"),
    ("sendVideo", "song.mp3"),
    ("sendVoice", "photo.png"),
])
def test_kind_mismatch(bot, chat, upload, method, sample):
    field = METHODS[method][0]
    body = assert_failure(bot.call(method, {"chat_id": chat.chat_id,
                                            field: upload(sample)["file_id"]}),
                          400, "INVALID_PARAMETER")
    assert body["parameters"] == {"field": field, "reason": "type_mismatch"}


def test_kind_mismatch_of_a_direct_upload_stores_nothing(bot, chat, samples, storage):
    response = multipart(bot, "sendVoice", {"voice": (samples["video.mp4"], "v.mp4")},
                         chat_id=chat.chat_id)
    body = assert_failure(response, 400, "INVALID_PARAMETER")
    assert body["parameters"] == {"field": "voice", "reason": "type_mismatch"}
    storage.assert_nothing_stored()


def test_a_hostile_direct_upload_names_the_media_field(bot, chat, storage):
    response = multipart(bot, "sendPhoto", {"photo": (b"MZ" + b"\x00" * 200, "x.jpg")},
                         chat_id=chat.chat_id)
    body = assert_failure(response, 400, "INVALID_PARAMETER")
    assert body["parameters"] == {"field": "photo", "reason": "unsupported_type"}
    storage.assert_nothing_stored()


@pytest.mark.parametrize("value", [
    "https://example.com/cat.jpg", "http://127.0.0.1/x.jpg", "file:///etc/passwd",
    "/etc/passwd", "../data/files/x", "C:\\photo.jpg", "a" * 47, "A" * 48, "a" * 49, "",
])
def test_urls_and_paths_are_not_file_ids(bot, chat, value):
    assert_invalid(bot.call("sendPhoto", {"chat_id": chat.chat_id, "photo": value}), "photo")


def test_non_string_media(bot, chat):
    for value in (5, None, ["a" * 48], {"file_id": "a" * 48}):
        assert_invalid(bot.call("sendPhoto", {"chat_id": chat.chat_id, "photo": value}), "photo")


def test_another_bots_file_id_is_refused(bot, new_bot, chat, upload):
    other = new_bot()
    theirs = upload("photo.png", as_bot=other)["file_id"]
    body = assert_invalid(bot.call("sendPhoto", {"chat_id": chat.chat_id, "photo": theirs}),
                          "photo")
    assert "reason" not in body["parameters"]
    assert_invalid(bot.call("sendPhoto", {"chat_id": chat.chat_id, "photo": "f" * 48}), "photo")


def test_a_media_field_missing_or_sent_to_the_wrong_method(bot, chat, samples):
    assert_invalid(bot.call("sendPhoto", {"chat_id": chat.chat_id}), "photo")
    response = multipart(bot, "sendPhoto", {"video": (samples["video.mp4"], "v.mp4")},
                         chat_id=chat.chat_id)
    assert_invalid(response, "video")
    response = multipart(bot, "sendMessage", {"photo": (samples["photo.png"], "p.png")},
                         chat_id=chat.chat_id, text="x")
    assert_invalid(response, "photo")


def test_caption_rules(bot, chat, upload):
    file_id = upload("photo.png")["file_id"]
    ok = bot.ok("sendPhoto", chat_id=chat.chat_id, photo=file_id, caption="é" * 2048)
    assert ok["caption"] == "é" * 2048
    assert_invalid(bot.call("sendPhoto", {"chat_id": chat.chat_id, "photo": file_id,
                                          "caption": "é" * 2048 + "x"}), "caption")
    assert "caption" not in bot.ok("sendPhoto", chat_id=chat.chat_id, photo=file_id,
                                   caption="")
    assert_invalid(bot.call("sendPhoto", {"chat_id": chat.chat_id, "photo": file_id,
                                          "parse_mode": "HTML"}), "parse_mode")
    assert bot.ok("sendPhoto", chat_id=chat.chat_id, photo=file_id, parse_mode="plain")


# -- membership before media work ---------------------------------------------------

def test_membership_is_checked_before_any_media_work(bot, operator, start_chat, samples,
                                                      storage, monkeypatch):
    monkeypatch.setattr("botsvc.domain.files.process_upload",
                        lambda *a, **k: pytest.fail("media work for a refused send"))
    photo = {"photo": (samples["photo.png"], "p.png")}
    assert_failure(multipart(bot, "sendPhoto", photo, chat_id="vc_" + "0" * 40), 404,
                   "CHAT_NOT_FOUND")
    stopped, blocked = start_chat(bot), start_chat(bot)
    operator("userStop", user_id=stopped.user_id, bot_id=bot.id)
    operator("userBlock", user_id=blocked.user_id, bot_id=bot.id)
    assert_failure(multipart(bot, "sendPhoto", photo, chat_id=stopped.chat_id), 403,
                   "BOT_NOT_STARTED")
    assert_failure(multipart(bot, "sendPhoto", photo, chat_id=blocked.chat_id), 403,
                   "BOT_BLOCKED")
    active = start_chat(bot)
    assert_failure(multipart(bot, "sendPhoto", photo, chat_id=active.chat_id,
                             reply_to_message_id=99999), 404, "MESSAGE_NOT_FOUND")
    storage.assert_nothing_stored()


def test_file_id_sends_check_the_chat_too(bot, new_bot, upload):
    file_id = upload("photo.png")["file_id"]
    assert_failure(bot.call("sendPhoto", {"chat_id": "vc_" + "1" * 40, "photo": file_id}),
                   404, "CHAT_NOT_FOUND")


# -- rates ------------------------------------------------------------------------

def test_a_direct_upload_takes_the_upload_rate_a_file_id_does_not(make_app, samples):
    app = make_app(rate_uploads_per_min=1)
    bot = bot_on(app)
    operator_client = bot.client
    operator = Operator(operator_client)
    user = operator("createUser")["user_id"]
    chat_id = operator("userStart", user_id=user, bot_id=bot.id)["chat_id"]
    file = multipart(bot, "uploadFile", {"file": (samples["photo.png"], "p.png")}
                     ).get_json()["result"]
    limited = multipart(bot, "sendPhoto", {"photo": (samples["photo.png"], "p.png")},
                        chat_id=chat_id)
    assert_failure(limited, 429, "RATE_LIMITED")
    for _ in range(3):
        bot.ok("sendPhoto", chat_id=chat_id, photo=file["file_id"])
    assert len(Storage(app).rows()) == 1


def test_send_rate_applies_to_media(make_app, samples):
    app = make_app(rate_sends_per_sec=2)
    bot = bot_on(app)
    operator = Operator(bot.client)
    user = operator("createUser")["user_id"]
    chat_id = operator("userStart", user_id=user, bot_id=bot.id)["chat_id"]
    file_id = multipart(bot, "uploadFile", {"file": (samples["photo.png"], "p.png")}
                        ).get_json()["result"]["file_id"]
    results = [bot.call("sendPhoto", {"chat_id": chat_id, "photo": file_id}).status_code
               for _ in range(3)]
    assert results == [200, 200, 429]


def test_idempotent_direct_upload_sends_once(bot, chat, samples, storage, operator):
    key = {"Idempotency-Key": "photo-1"}
    first = multipart(bot, "sendPhoto", {"photo": (samples["photo.png"], "p.png")},
                      chat_id=chat.chat_id, headers=key)
    again = multipart(bot, "sendPhoto", {"photo": (samples["photo.png"], "p.png")},
                      chat_id=chat.chat_id, headers=key)
    assert first.status_code == 200 and again.get_json() == first.get_json()
    assert again.headers["Idempotent-Replayed"] == "true"
    assert len(storage.rows()) == 1
    sent = [m for m in operator("userGetChat", user_id=chat.user_id, bot_id=bot.id)["messages"]
            if m["from_bot"]]
    assert len(sent) == 1


# -- media groups -----------------------------------------------------------------

def group_items(upload, count: int) -> list[dict]:
    photo, video = upload("photo.png")["file_id"], upload("video.mp4")["file_id"]
    return [{"type": "photo", "media": photo, "caption": f"#{n}"} if n % 2 == 0
            else {"type": "video", "media": video} for n in range(count)]


@pytest.mark.parametrize("count", [2, 10])
def test_a_media_group_of_2_or_10(bot, chat, upload, operator, count):
    items = group_items(upload, count)
    sent = bot.ok("sendMediaGroup", chat_id=chat.chat_id, media=items)
    assert len(sent) == count
    assert len({m["message_id"] for m in sent}) == count
    group_ids = {m["media_group_id"] for m in sent}
    assert len(group_ids) == 1 and isinstance(group_ids.pop(), str)
    for item, message in zip(items, sent, strict=True):
        assert message["type"] == item["type"] and message["media"]["file_id"] == item["media"]
        assert message.get("caption") == item.get("caption")
        assert "reply_markup" not in message
    view = operator("userGetChat", user_id=chat.user_id, bot_id=bot.id)["messages"]
    assert view[-count:] == sent


@pytest.mark.parametrize("count", [0, 1, 11])
def test_a_media_group_of_other_sizes_is_refused(bot, chat, upload, count):
    items = group_items(upload, max(count, 2))[:count]
    assert_invalid(bot.call("sendMediaGroup", {"chat_id": chat.chat_id, "media": items}),
                   "media")


def test_media_group_item_rules(bot, chat, upload):
    items = group_items(upload, 2)
    audio = upload("song.mp3")["file_id"]
    gif = upload("anim.gif")["file_id"]
    cases = [
        ([{**items[0], "type": "audio"}, items[1]], "media.0.type", None),
        ([{**items[0], "type": "document"}, items[1]], "media.0.type", None),
        ([items[0], {"type": "video", "media": audio}], "media.1.media", "type_mismatch"),
        ([items[0], {"type": "video", "media": gif}], "media.1.media", "type_mismatch"),
        ([items[0], {"type": "photo", "media": "https://x.test/a.jpg"}], "media.1.media", None),
        ([items[0], {"type": "photo", "media": "e" * 48}], "media.1.media", None),
        ([items[0], {**items[1], "parse_mode": "plain"}], "media.1.parse_mode", None),
        ([items[0], {"type": "photo"}], "media.1.media", None),
    ]
    for media, path, reason in cases:
        body = assert_invalid(bot.call("sendMediaGroup", {"chat_id": chat.chat_id,
                                                          "media": media}), "media")
        assert body["parameters"].get("path") == path, body
        assert body["parameters"].get("reason") == reason, body
    for extra in ({"reply_markup": {"inline_keyboard": []}}, {"reply_to_message_id": 1},
                  {"caption": "x"}):
        name = next(iter(extra))
        assert_invalid(bot.call("sendMediaGroup", {"chat_id": chat.chat_id, "media": items,
                                                   **extra}), name)


def test_a_media_group_takes_no_files(bot, chat, samples):
    response = multipart(bot, "sendMediaGroup", {"media": (samples["photo.png"], "p.png")},
                         chat_id=chat.chat_id)
    assert_invalid(response, "media")


# -- broadcasts of media ------------------------------------------------------------

def test_a_broadcast_of_send_photo_is_delivered(app, bot, start_chat, upload, operator,
                                                monkeypatch):
    chats = [start_chat(bot) for _ in range(3)]
    file = upload("photo.jpg")
    # A file_id payload means no media work, neither at creation nor at delivery.
    monkeypatch.setattr("botsvc.domain.files.process_upload",
                        lambda *a, **k: pytest.fail("media work in a broadcast"))
    created = bot.ok("createBroadcast", method="sendPhoto",
                     payload={"photo": file["file_id"], "caption": "to all"})
    run_job(app, "deliver_due_broadcasts")
    done = bot.ok("getBroadcast", broadcast_id=created["broadcast_id"])
    assert done["status"] == "completed"
    assert done["counts"] == {"queued": 0, "sent": 3, "failed": 0, "cancelled": 0}
    for chat in chats:
        [message] = [m for m in operator("userGetChat", user_id=chat.user_id,
                                         bot_id=bot.id)["messages"] if m["from_bot"]]
        assert_media_message(message, "photo", file, chat.chat_id, "to all")


@pytest.mark.parametrize("method, field, sample, reason", [
    ("sendVoice", "voice", "video.mp4", "type_mismatch"),
    ("sendPhoto", "photo", None, None),
])
def test_a_broadcast_payload_with_a_bad_file_is_refused_at_creation(
        bot, chat, upload, method, field, sample, reason):
    file_id = upload(sample)["file_id"] if sample else "c" * 48
    body = assert_invalid(bot.call("createBroadcast", {"method": method,
                                                       "payload": {field: file_id}}), "payload")
    assert body["parameters"]["path"] == f"payload.{field}"
    assert body["parameters"].get("reason") == reason


def test_a_broadcast_payload_with_a_url_is_refused(bot, chat):
    body = assert_invalid(bot.call("createBroadcast", {
        "method": "sendDocument", "payload": {"document": "https://example.com/x.pdf"}}),
        "payload")
    assert body["parameters"]["path"] == "payload.document"


@pytest.mark.parametrize("members", ["none active", "stopped member named"])
def test_a_bad_file_in_a_broadcast_is_refused_with_no_member_to_try_it_on(
        bot, new_bot, start_chat, operator, upload, members):
    chat = start_chat(bot)
    operator("userStop", user_id=chat.user_id, bot_id=bot.id)
    foreign = upload("photo.jpg", as_bot=new_bot())["file_id"]
    video = upload("video.mp4")["file_id"]
    extra = {"chat_ids": [chat.chat_id]} if members == "stopped member named" else {}
    for method, field, file_id, reason in [("sendPhoto", "photo", foreign, None),
                                           ("sendPhoto", "photo", "0" * 48, None),
                                           ("sendVideo", "video", foreign, None),
                                           ("sendVoice", "voice", video, "type_mismatch")]:
        body = assert_invalid(bot.call("createBroadcast", {
            "method": method, "payload": {field: file_id}, **extra}), "payload")
        assert body["parameters"]["path"] == f"payload.{field}"
        assert body["parameters"].get("reason") == reason
    assert bot.ok("getSubscribers")["subscribers"] == []
