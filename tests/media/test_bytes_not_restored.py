"""A database restored from its replica without the stored files' bytes
(docs/production.md): every way to a file whose bytes did not come back
refuses it in the contract's envelope, as for a file that never was;
never a 500. The messages that showed it stay as they were."""
from __future__ import annotations

import os
from urllib.parse import urlencode, urlsplit

import pytest

from botsvc.domain import files
from tests.support.contract import assert_failure, assert_invalid
from tests.support.media_files import multipart


@pytest.fixture
def lost_file(app, bot, chat):
    """A file sent once, whose bytes are then gone from storage; with a
    signed link given out before."""
    uploaded = multipart(bot, "uploadFile", {"file": (b"bytes that stay behind\n", "a.txt")})
    file = uploaded.get_json()["result"]
    message = bot.ok("sendDocument", chat_id=chat.chat_id, document=file["file_id"])
    url = urlsplit(bot.ok("getFile", file_id=file["file_id"])["download_url"])
    data_dir = app.config["SETTINGS"].data_dir
    names = os.listdir(files.files_dir(data_dir))
    assert len(names) == 1
    os.unlink(files.storage_path(data_dir, names[0]))
    return {"file_id": file["file_id"], "message": message, "signed": f"{url.path}?{url.query}"}


def test_a_download_is_file_not_found(bot, lost_file):
    response = bot.client.get(f"/download.php?{urlencode({'file_id': lost_file['file_id']})}",
                              headers={"Authorization": f"Bearer {bot.token}"})
    assert_failure(response, 404, "FILE_NOT_FOUND", field="file_id")


def test_a_signed_link_given_before_is_refused_as_for_a_deleted_file(bot, lost_file):
    assert_failure(bot.client.get(lost_file["signed"]), 401, "UNAUTHORIZED")


def test_get_file_and_a_send_by_file_id_refuse_it(bot, chat, lost_file):
    assert_invalid(bot.call("getFile", {"file_id": lost_file["file_id"]}), "file_id")
    assert_invalid(bot.call("sendDocument", {"chat_id": chat.chat_id,
                                             "document": lost_file["file_id"]}), "document")


def test_a_broadcast_of_it_is_refused(bot, chat, lost_file):
    response = bot.call("createBroadcast", {"method": "sendDocument",
                                            "payload": {"document": lost_file["file_id"]}})
    body = assert_invalid(response, "payload")
    assert body["parameters"]["path"] == "payload.document"
    assert body["description"] == "document is not a file_id of a clean file of this bot"


def test_the_message_that_showed_it_is_unchanged(operator, bot, chat, lost_file):
    messages = operator("userGetChat", user_id=chat.user_id, bot_id=bot.id)["messages"]
    assert [m["media"]["file_id"] for m in messages if m.get("media")] == [lost_file["file_id"]]


def test_bytes_gone_after_the_lookup_are_file_not_found(monkeypatch, bot, lost_file):
    # The bytes vanish between the row's lookup and the reading (a reset).
    monkeypatch.setattr(files, "bytes_present", lambda conn, row: True)
    response = bot.client.get(f"/download.php?{urlencode({'file_id': lost_file['file_id']})}",
                              headers={"Authorization": f"Bearer {bot.token}"})
    assert_failure(response, 404, "FILE_NOT_FOUND", field="file_id")
