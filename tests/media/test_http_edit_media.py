"""editMessageCaption and editMessageMedia: media messages only, own
messages, active membership, media-group rules, the user's view updated."""
from __future__ import annotations

import pytest

from tests.support.contract import assert_failure, assert_invalid
from tests.support.media_files import multipart


@pytest.fixture
def upload(bot, samples):
    def run(name: str, as_bot=None) -> str:
        response = multipart(as_bot or bot, "uploadFile", {"file": (samples[name], name)})
        assert response.status_code == 200, response.get_json()
        return response.get_json()["result"]["file_id"]
    return run


@pytest.fixture
def photo_message(bot, chat, upload):
    return bot.ok("sendPhoto", chat_id=chat.chat_id, photo=upload("photo.png"), caption="old",
                  reply_markup={"inline_keyboard": [[{"text": "a", "callback_data": "a"}]]})


def user_sees(operator, chat, bot, message_id: int) -> dict:
    messages = operator("userGetChat", user_id=chat.user_id, bot_id=bot.id)["messages"]
    return next(m for m in messages if m["message_id"] == message_id)


# -- editMessageCaption ------------------------------------------------------------

def test_edit_caption(bot, chat, operator, photo_message):
    ref = {"chat_id": chat.chat_id, "message_id": photo_message["message_id"]}
    edited = bot.ok("editMessageCaption", **ref, caption="new", parse_mode="plain")
    assert edited["caption"] == "new" and isinstance(edited["edit_date"], int)
    assert edited["media"] == photo_message["media"] and edited["type"] == "photo"
    assert edited["reply_markup"] == photo_message["reply_markup"]
    assert user_sees(operator, chat, bot, photo_message["message_id"]) == edited
    # Omitted caption: unchanged; a keyboard alone changes the buttons.
    only_buttons = bot.ok("editMessageCaption", **ref, reply_markup={"inline_keyboard": []})
    assert only_buttons["caption"] == "new" and "reply_markup" not in only_buttons
    removed = bot.ok("editMessageCaption", **ref, caption="")
    assert "caption" not in removed
    assert "caption" not in user_sees(operator, chat, bot, photo_message["message_id"])
    assert_invalid(bot.call("editMessageCaption", {**ref, "caption": "x" * 4097}), "caption")
    assert_invalid(bot.call("editMessageCaption", {**ref, "parse_mode": "HTML"}), "parse_mode")


def test_edit_caption_applies_to_media_messages_only(bot, chat):
    text = bot.ok("sendMessage", chat_id=chat.chat_id, text="hello")
    card = bot.ok("sendCard", chat_id=chat.chat_id, card={"type": "info", "title": "T"})
    for message in (text, card):
        assert_invalid(bot.call("editMessageCaption", {
            "chat_id": chat.chat_id, "message_id": message["message_id"], "caption": "x"}),
            "message_id")


def test_edit_caption_of_every_media_type(bot, chat, upload):
    for method, field, sample in (("sendVoice", "voice", "song.mp3"),
                                  ("sendDocument", "document", "notes.txt"),
                                  ("sendAnimation", "animation", "anim.gif")):
        sent = bot.ok(method, chat_id=chat.chat_id, **{field: upload(sample)})
        edited = bot.ok("editMessageCaption", chat_id=chat.chat_id,
                        message_id=sent["message_id"], caption="c")
        assert edited["caption"] == "c" and edited["type"] == field


def test_edit_caption_refusals(bot, new_bot, chat, operator, start_chat, photo_message):
    ref = {"chat_id": chat.chat_id, "message_id": photo_message["message_id"], "caption": "x"}
    other = new_bot()
    assert_failure(other.call("editMessageCaption", ref), 404, "CHAT_NOT_FOUND")
    user_message = operator("userSendMessage", user_id=chat.user_id, bot_id=bot.id, text="hi")
    assert_failure(bot.call("editMessageCaption", {**ref, "message_id":
                                                   user_message["message_id"]}),
                   404, "MESSAGE_NOT_FOUND")
    operator("userStop", user_id=chat.user_id, bot_id=bot.id)
    assert_failure(bot.call("editMessageCaption", ref), 403, "BOT_NOT_STARTED")


def test_media_group_members_take_captions_but_no_buttons(bot, chat, upload):
    photo = upload("photo.png")
    group = bot.ok("sendMediaGroup", chat_id=chat.chat_id,
                   media=[{"type": "photo", "media": photo}] * 2)
    ref = {"chat_id": chat.chat_id, "message_id": group[1]["message_id"]}
    assert bot.ok("editMessageCaption", **ref, caption="second")["caption"] == "second"
    assert_invalid(bot.call("editMessageCaption", {
        **ref, "reply_markup": {"inline_keyboard": [[{"text": "a", "callback_data": "a"}]]}}),
        "reply_markup")


# -- editMessageMedia --------------------------------------------------------------

def test_edit_media_keeps_the_type_by_default(bot, chat, operator, upload, photo_message):
    new_photo = upload("photo.jpg")
    edited = bot.ok("editMessageMedia", chat_id=chat.chat_id,
                    message_id=photo_message["message_id"], media=new_photo)
    assert edited["type"] == "photo" and edited["media"]["file_id"] == new_photo
    assert edited["media"]["mime_type"] == "image/jpeg"
    assert edited["caption"] == "old" and edited["reply_markup"] == photo_message["reply_markup"]
    assert isinstance(edited["edit_date"], int)
    assert user_sees(operator, chat, bot, photo_message["message_id"]) == edited


def test_edit_media_changes_the_type(bot, chat, upload, photo_message):
    ref = {"chat_id": chat.chat_id, "message_id": photo_message["message_id"]}
    clip = upload("video.mp4")   # a file_id serves any number of messages
    video = bot.ok("editMessageMedia", **ref, media=clip, type="video",
                   caption="now a video")
    assert (video["type"], video["media"]["kind"], video["caption"]) == ("video", "video",
                                                                          "now a video")
    voice = bot.ok("editMessageMedia", **ref, media=upload("song.mp3"), type="voice",
                   caption="", reply_markup={"inline_keyboard": []})
    assert voice["type"] == "voice" and "caption" not in voice and "reply_markup" not in voice
    document = bot.ok("editMessageMedia", **ref, media=clip, type="document")
    assert document["type"] == "document" and document["media"]["kind"] == "video"


def test_edit_media_kind_must_match_the_type(bot, chat, upload, photo_message):
    ref = {"chat_id": chat.chat_id, "message_id": photo_message["message_id"]}
    clip = upload("video.mp4")
    for file, type in ((clip, None), (clip, "animation"),
                       (upload("anim.gif"), "video"), (upload("photo.png"), "audio")):
        body = assert_invalid(bot.call("editMessageMedia", {
            **ref, "media": file, **({"type": type} if type else {})}), "media")
        assert body["parameters"]["reason"] == "type_mismatch"


def test_text_and_cards_never_become_media(bot, chat, upload):
    photo = upload("photo.png")
    text = bot.ok("sendMessage", chat_id=chat.chat_id, text="hello")
    card = bot.ok("sendCard", chat_id=chat.chat_id, card={"type": "info", "title": "T"})
    for message in (text, card):
        for extra in ({}, {"type": "photo"}, {"type": "document"}):
            assert_invalid(bot.call("editMessageMedia", {
                "chat_id": chat.chat_id, "message_id": message["message_id"], "media": photo,
                **extra}), "message_id")


def test_media_group_members_stay_photo_or_video(bot, chat, upload):
    photo, video = upload("photo.png"), upload("video.mp4")
    group = bot.ok("sendMediaGroup", chat_id=chat.chat_id,
                   media=[{"type": "photo", "media": photo}, {"type": "video", "media": video}])
    ref = {"chat_id": chat.chat_id, "message_id": group[0]["message_id"]}
    song = upload("song.mp3")
    for type, file in (("audio", song), ("voice", song),
                       ("document", photo), ("animation", upload("anim.gif"))):
        assert_invalid(bot.call("editMessageMedia", {**ref, "media": file, "type": type}),
                       "type")
    became = bot.ok("editMessageMedia", **ref, media=video, type="video")
    assert became["type"] == "video" and became["media_group_id"] == group[0]["media_group_id"]
    assert_invalid(bot.call("editMessageMedia", {
        **ref, "media": photo, "type": "photo",
        "reply_markup": {"inline_keyboard": [[{"text": "a", "callback_data": "a"}]]}}),
        "reply_markup")


def test_edit_media_request_rules(bot, new_bot, chat, operator, upload, photo_message):
    ref = {"chat_id": chat.chat_id, "message_id": photo_message["message_id"]}
    theirs = upload("photo.png", as_bot=new_bot())
    assert_invalid(bot.call("editMessageMedia", ref), "media")
    for media in ("https://example.com/a.png", "/etc/passwd", theirs, "d" * 48):
        assert_invalid(bot.call("editMessageMedia", {**ref, "media": media}), "media")
    mine = upload("photo.png")
    assert_invalid(bot.call("editMessageMedia", {**ref, "media": mine, "type": "card"}), "type")
    assert_invalid(bot.call("editMessageMedia", {**ref, "media": mine, "parse_mode": "plain"}),
                   "parse_mode")
    assert_failure(bot.call("editMessageMedia", {**ref, "media": mine, "message_id": 9999}),
                   404, "MESSAGE_NOT_FOUND")
    operator("userBlock", user_id=chat.user_id, bot_id=bot.id)
    assert_failure(bot.call("editMessageMedia", {**ref, "media": mine}), 403, "BOT_BLOCKED")


def test_edit_media_takes_no_upload(bot, chat, samples, photo_message):
    response = multipart(bot, "editMessageMedia", {"media": (samples["photo.png"], "p.png")},
                         chat_id=chat.chat_id, message_id=photo_message["message_id"])
    assert_invalid(response, "media")


def test_a_deleted_media_message_cannot_be_edited(bot, chat, upload, photo_message):
    ref = {"chat_id": chat.chat_id, "message_id": photo_message["message_id"]}
    assert bot.ok("deleteMessage", **ref) is True
    assert_failure(bot.call("editMessageCaption", {**ref, "caption": "x"}), 404,
                   "MESSAGE_NOT_FOUND")
    assert_failure(bot.call("editMessageMedia", {**ref, "media": upload("photo.png")}), 404,
                   "MESSAGE_NOT_FOUND")
