"""userSendMedia and ``botsvc user-send-media``: a user's file goes through the
same pipeline, belongs to the bot, and reaches it as a media message."""
from __future__ import annotations

import json
import os

import pytest

from botsvc.config import Settings
from botsvc.factory import create_app
from tests.support.cli import botsvc
from tests.support.contract import ADMIN_TOKEN, BotClient, assert_failure, assert_invalid
from tests.support.media_files import KIND_OF


def user_send(client, data: bytes, name: str, **params):
    import io

    form = {"file": (io.BytesIO(data), name, "application/octet-stream"),
            **{k: v if isinstance(v, str) else json.dumps(v) for k, v in params.items()}}
    return client.post("/manage/v1/userSendMedia", data=form, content_type="multipart/form-data",
                       headers={"Authorization": f"Bearer {ADMIN_TOKEN}"})


@pytest.mark.parametrize("sample, type", [
    ("photo.jpg", "photo"), ("video.mp4", "video"), ("anim.gif", "animation"),
    ("song.mp3", "audio"), ("doc.pdf", "document"), ("notes.txt", "document"),
])
def test_the_bot_receives_the_users_media(bot, chat, client, samples, storage, sample, type):
    bot.ok("getUpdates", offset=chat.update_id + 1)
    response = user_send(client, samples[sample], sample, user_id=chat.user_id,
                         bot_id=bot.id, caption="from me")
    assert response.status_code == 200, response.get_json()
    message = response.get_json()["result"]
    assert (message["type"], message["from_bot"], message["caption"]) == (type, False, "from me")
    assert message["media"]["kind"] == KIND_OF[sample]
    [update] = bot.ok("getUpdates", offset=chat.update_id + 1)
    assert update["message"] == message and set(update) == {"update_id", "message"}
    # The file is the bot's: it may fetch it and send it on.
    file = bot.ok("getFile", file_id=message["media"]["file_id"])
    assert file["file_id"] == message["media"]["file_id"]
    download = bot.client.get(file["download_url"].split("8080", 1)[1])
    assert download.status_code == 200 and len(download.data) == file["file_size"]
    [row] = storage.rows()
    assert row["bot_id"] == bot.id
    assert storage.leftovers() == []


def test_a_user_voice_note_and_resending_it(bot, chat, client, samples, new_bot):
    message = user_send(client, samples["song.mp3"], "note.mp3", user_id=chat.user_id,
                        bot_id=bot.id, type="voice").get_json()["result"]
    assert message["type"] == "voice" and "caption" not in message
    sent = bot.ok("sendVoice", chat_id=chat.chat_id, voice=message["media"]["file_id"],
                  reply_to_message_id=message["message_id"])
    assert sent["reply_to_message_id"] == message["message_id"]
    other = new_bot()
    assert_invalid(other.call("getFile", {"file_id": message["media"]["file_id"]}), "file_id")


def test_user_media_refusals(bot, chat, client, samples, storage, operator, new_user):
    body = assert_failure(user_send(client, samples["video.mp4"], "v.mp4", user_id=chat.user_id,
                                    bot_id=bot.id, type="photo"), 400, "INVALID_PARAMETER")
    assert body["parameters"] == {"field": "file", "reason": "type_mismatch"}
    body = assert_failure(user_send(client, b"MZ" + b"\x00" * 100, "x.png",
                                    user_id=chat.user_id, bot_id=bot.id),
                          400, "INVALID_PARAMETER")
    assert body["parameters"] == {"field": "file", "reason": "unsupported_type"}
    assert_invalid(user_send(client, samples["photo.png"], "p.png", user_id=chat.user_id,
                             bot_id=bot.id, type="sticker"), "type")
    assert_invalid(user_send(client, samples["photo.png"], "p.png", user_id=chat.user_id,
                             bot_id=bot.id, caption="x" * 4097), "caption")
    assert_failure(user_send(client, samples["photo.png"], "p.png", user_id=new_user(),
                             bot_id=bot.id), 404, "CHAT_NOT_FOUND")
    operator("userStop", user_id=chat.user_id, bot_id=bot.id)
    assert_failure(user_send(client, samples["photo.png"], "p.png", user_id=chat.user_id,
                             bot_id=bot.id), 403, "BOT_NOT_STARTED")
    missing = client.post("/manage/v1/userSendMedia", json={"user_id": chat.user_id,
                                                            "bot_id": bot.id},
                          headers={"Authorization": f"Bearer {ADMIN_TOKEN}"})
    assert_invalid(missing, "file")
    storage.assert_nothing_stored()


def test_cli_user_send_media(tmp_path, offline_signature_db, samples):
    data_dir = tmp_path / "cli-data"
    env = {"BOTSVC_DATA_DIR": str(data_dir), "BOTSVC_CLAMAV_DB": offline_signature_db,
           "BOTSVC_CLAMD_SOCKET": None}

    def cli(*args):
        done = botsvc(*args, env=env)
        assert done.returncode == 0, done.stderr
        return json.loads(done.stdout)

    assert botsvc("migrate", env=env).returncode == 0
    created = cli("create-bot", "media_cli_bot")
    user = cli("create-user")["user_id"]
    chat_id = cli("user-start", str(user), str(created["bot"]["id"]))["chat_id"]
    photo = tmp_path / "holiday photo.jpg"
    photo.write_bytes(samples["photo.jpg"])
    message = cli("user-send-media", str(user), str(created["bot"]["id"]), str(photo),
                  "--caption", "from the shell")
    assert (message["type"], message["caption"]) == ("photo", "from the shell")
    assert message["media"]["file_name"] == "holiday photo.jpg"
    assert os.listdir(data_dir / "quarantine") == []
    app = create_app(Settings.from_env({"BOTSVC_DATA_DIR": str(data_dir)}))
    bot = BotClient(app.test_client(), created["bot"], created["token"])
    assert bot.ok("getFile", file_id=message["media"]["file_id"])["kind"] == "photo"
    assert bot.ok("getChat", chat_id=chat_id)["status"] == "active"
    # A refused file is reported on stderr, and leaves nothing behind.
    bad = tmp_path / "x.jpg"
    bad.write_bytes(b"MZ" + b"\x00" * 100)
    done = botsvc("user-send-media", str(user), str(created["bot"]["id"]), str(bad), env=env)
    assert done.returncode == 1
    assert json.loads(done.stderr.strip().splitlines()[-1])["parameters"] == {
        "field": "file", "reason": "unsupported_type"}
    assert os.listdir(data_dir / "quarantine") == []


def test_cli_check_media(tmp_path, offline_signature_db):
    env = {"BOTSVC_DATA_DIR": str(tmp_path / "d"), "BOTSVC_CLAMAV_DB": offline_signature_db,
           "BOTSVC_CLAMD_SOCKET": None}
    done = botsvc("check-media", env=env)
    assert done.returncode == 0 and "OK" in done.stdout, done.stderr
    env["BOTSVC_CLAMAV_DB"] = str(tmp_path / "no-such-db")
    done = botsvc("check-media", env=env)
    assert done.returncode == 1
    assert json.loads(done.stderr.strip().splitlines()[-1])["parameters"] == {
        "dependency": "clamav"}
