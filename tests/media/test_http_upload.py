"""uploadFile and getFile over HTTP: every accepted family, the request rules,
hostile uploads, failing closed, the quota, the upload rate and ceiling."""
from __future__ import annotations

import dataclasses
import re
import struct
import time

import pytest

from botsvc.domain import file_links
from tests.support.contract import ADMIN_TOKEN, BotClient, assert_failure, assert_invalid
from tests.support.media_files import (
    EICAR,
    KIND_OF,
    Storage,
    bot_on,
    gif_bytes,
    image_bytes,
    multipart,
    pdf_bytes,
    png_header_only,
)

FILE_ID = re.compile(r"^[a-f0-9]{48}\Z")
FILE_KEYS = {"file_id", "kind", "mime_type", "file_name", "file_size", "sha256"}


def upload(bot, data: bytes, name: str, declared: str | None = None, **extra):
    spec = (data, name, declared) if declared else (data, name)
    return multipart(bot, "uploadFile", {"file": spec}, **extra)


# -- every accepted family -----------------------------------------------------------

EXPECTED = {
    "photo.jpg": ("image/jpeg", "photo.jpg", {"width": 24, "height": 16}),
    "photo.png": ("image/png", "photo.png", {"width": 24, "height": 16}),
    "photo.webp": ("image/webp", "photo.webp", {"width": 24, "height": 16}),
    "anim.gif": ("video/mp4", "anim.mp4", {"width": 16, "height": 16, "duration": float}),
    "video.mp4": ("video/mp4", "video.mp4", {"width": 160, "height": 120, "duration": float}),
    "song.mp3": ("audio/ogg", "song.ogg", {"duration": float}),
    "tone.wav": ("audio/ogg", "tone.ogg", {"duration": float}),
    "doc.pdf": ("application/pdf", "doc.pdf", {"pages": 1}),
    "notes.txt": ("text/plain", "notes.txt", {}),
    "table.csv": ("text/csv", "table.csv", {}),
    "data.json": ("application/json", "data.json", {}),
}


@pytest.mark.parametrize("name", sorted(EXPECTED))
def test_each_accepted_family_uploads(bot, samples, storage, name):
    response = upload(bot, samples[name], name)
    assert response.status_code == 200, response.get_json()
    file = response.get_json()["result"]
    mime, display_name, metadata = EXPECTED[name]
    assert set(file) == FILE_KEYS | set(metadata)
    assert FILE_ID.match(file["file_id"])
    assert (file["kind"], file["mime_type"], file["file_name"]) == (KIND_OF[name], mime,
                                                                    display_name)
    for key, expected in metadata.items():
        if expected is float:
            assert isinstance(file[key], float) and file[key] > 0
        else:
            assert file[key] == expected
    # Stored under a name the server chose, with the size and hash announced.
    [row] = storage.rows()
    assert row["file_id"] == file["file_id"] and row["bot_id"] == bot.id
    [stored] = storage.stored_names()
    assert re.match(r"^[a-f0-9]{32}\Z", stored) and stored == row["storage_name"]
    content = (storage.data_dir / "files" / stored).read_bytes()
    assert len(content) == file["file_size"]
    import hashlib
    assert hashlib.sha256(content).hexdigest() == file["sha256"]
    # No path, no link, nothing left in quarantine or in the work dir.
    assert str(storage.data_dir) not in response.get_data(as_text=True)
    assert "download_url" not in file and "expires_at" not in file
    assert storage.leftovers() == []


def test_a_file_name_never_becomes_a_path(bot, samples, storage):
    file = upload(bot, samples["photo.png"], "../../etc/evil.png").get_json()["result"]
    assert file["file_name"] == "evil.png"
    assert storage.stored_names() == [storage.rows()[0]["storage_name"]]
    assert not (storage.data_dir.parent / "etc").exists()


# -- the request ------------------------------------------------------------------------

def test_a_json_body_is_not_an_upload(bot):
    assert_invalid(bot.call("uploadFile", {}), "file")
    assert_invalid(bot.call("uploadFile", {"file": "photo.jpg"}), "file")
    assert_invalid(bot.call("uploadFile", {"file": "https://example.com/a.jpg"}), "file")


def test_only_the_file_field(bot, samples, storage):
    photo = samples["photo.png"]
    assert_invalid(multipart(bot, "uploadFile", {"file": (photo, "a.png")}, kind="photo"), "kind")
    assert_invalid(multipart(bot, "uploadFile", {"document": (photo, "a.png")}), "document")
    assert_invalid(multipart(bot, "uploadFile", {}, file="not a file part"), "file")
    storage.assert_nothing_stored()


def test_idempotent_upload_is_stored_once(bot, samples, storage):
    first = upload(bot, samples["photo.png"], "a.png", headers={"Idempotency-Key": "up-1"})
    again = upload(bot, samples["photo.png"], "a.png", headers={"Idempotency-Key": "up-1"})
    assert again.headers.get("Idempotent-Replayed") == "true"
    assert again.get_json() == first.get_json()
    assert len(storage.rows()) == 1 and len(storage.stored_names()) == 1
    # The same bytes under another name would give another result: a conflict.
    renamed = upload(bot, samples["photo.png"], "b.png", headers={"Idempotency-Key": "up-1"})
    assert_failure(renamed, 409, "IDEMPOTENCY_CONFLICT")


# -- hostile uploads ----------------------------------------------------------------

def wav_header(data_bytes: int, rate: int = 8000) -> bytes:
    return (b"RIFF" + struct.pack("<I", 36 + data_bytes) + b"WAVEfmt "
            + struct.pack("<IHHIIHH", 16, 1, 1, rate, rate, 1, 8) + b"data"
            + struct.pack("<I", data_bytes))


HOSTILE = [
    (EICAR + b"\n", "eicar.txt", "infected"),
    (b"MZ\x90\x00\x03\x00\x00\x00\x04\x00\x00\x00\xff\xff" + b"\x00" * 300, "cat.jpg",
     "unsupported_type"),
    (b'<svg xmlns="http://www.w3.org/2000/svg"><script>alert(1)</script></svg>', "x.svg",
     "unsupported_type"),
    (b"<!DOCTYPE html><html><script>alert(1)</script></html>\n", "x.txt", "unsupported_type"),
    (image_bytes("PNG"), "photo.jpg", "type_mismatch"),
    (image_bytes("JPEG"), "photo.php.jpg", "double_extension"),
    (png_header_only(8193, 16), "wide.png", "dimensions"),
    (png_header_only(50_000, 50_000), "bomb.png", "dimensions"),
    (pdf_bytes(javascript=True), "doc.pdf", "pdf_active"),
    (b"caf\xe9 au lait\n", "bad.txt", "text_invalid"),
    (wav_header(0), "silence.wav", "duration"),
    (b"#EXTM3U\n#EXTINF:1,\nhttp://127.0.0.1:9/x.ts\n#EXT-X-ENDLIST\n", "movie.mp4",
     "type_mismatch"),
    (b"", "empty.png", "empty_file"),
]


@pytest.mark.parametrize("data, name, reason", HOSTILE, ids=[h[1] for h in HOSTILE])
def test_hostile_uploads_are_refused_and_nothing_is_stored(bot, storage, data, name, reason):
    body = assert_failure(upload(bot, data, name), 400, "INVALID_PARAMETER")
    assert body["parameters"] == {"field": "file", "reason": reason}
    assert str(storage.data_dir) not in body["description"]
    storage.assert_nothing_stored()


def test_a_declared_type_that_disagrees(bot, samples, storage):
    body = assert_failure(upload(bot, samples["photo.png"], "a.png", "text/html"), 400,
                          "INVALID_PARAMETER")
    assert body["parameters"] == {"field": "file", "reason": "type_mismatch"}
    storage.assert_nothing_stored()


def test_an_upload_above_the_ceiling_is_413(make_app):
    app = make_app(upload_max_bytes=4096)
    bot = bot_on(app)
    response = upload(bot, b"a" * 5000 + b"\n", "big.txt")
    assert_failure(response, 413, "REQUEST_TOO_LARGE")
    Storage(app).assert_nothing_stored()


# -- failing closed ----------------------------------------------------------------

@pytest.mark.parametrize("tool, sample, dependency", [
    ("clamscan", "photo.png", "clamav"),
    ("ffmpeg", "video.mp4", "ffmpeg"),
    ("ffprobe", "song.mp3", "ffprobe"),
])
@pytest.mark.clamscan
def test_a_missing_tool_fails_closed(app, bot, samples, storage, tool, sample, dependency):
    app.config["MEDIA"] = dataclasses.replace(app.config["MEDIA"],
                                              **{tool: f"/nonexistent/{tool}"})
    response = upload(bot, samples[sample], sample)
    body = assert_failure(response, 503, "DEPENDENCY_UNAVAILABLE")
    assert body["parameters"] == {"dependency": dependency}
    assert "/nonexistent" not in body["description"]
    storage.assert_nothing_stored()


@pytest.mark.clamscan
def test_a_missing_signature_database_fails_closed(app, bot, samples, storage, tmp_path):
    app.config["MEDIA"] = dataclasses.replace(app.config["MEDIA"],
                                              clamav_db=str(tmp_path / "no-db"))
    body = assert_failure(upload(bot, samples["notes.txt"], "notes.txt"), 503,
                          "DEPENDENCY_UNAVAILABLE")
    assert body["parameters"] == {"dependency": "clamav"}
    storage.assert_nothing_stored()


@pytest.mark.clamscan
def test_a_503_is_not_kept_under_the_idempotency_key(app, bot, samples, storage):
    media = app.config["MEDIA"]
    app.config["MEDIA"] = dataclasses.replace(media, clamscan="/nonexistent/clamscan")
    key = {"Idempotency-Key": "retry-me"}
    assert upload(bot, samples["photo.png"], "a.png", headers=key).status_code == 503
    app.config["MEDIA"] = media
    assert upload(bot, samples["photo.png"], "a.png", headers=key).status_code == 200
    assert len(storage.rows()) == 1


# -- quota ----------------------------------------------------------------------------

def test_quota_counts_stored_bytes_per_bot(make_app, samples):
    probe_app = make_app()
    size = upload(bot_on(probe_app, "probe_bot"), samples["photo.png"], "a.png"
                  ).get_json()["result"]["file_size"]
    app = make_app(storage_quota_bytes=2 * size + size // 2)
    bot, other = bot_on(app, "full_bot"), bot_on(app, "other_bot")
    storage = Storage(app)
    assert upload(bot, samples["photo.png"], "a.png").status_code == 200
    assert upload(bot, samples["photo.png"], "b.png").status_code == 200
    rows = len(storage.rows())
    # The third would pass the quota by half a file: refused after processing.
    body = assert_failure(upload(bot, samples["photo.png"], "c.png"), 400, "INVALID_PARAMETER")
    assert body["parameters"] == {"field": "file", "reason": "quota_exceeded"}
    assert len(storage.rows()) == rows and len(storage.stored_names()) == rows
    assert storage.leftovers() == []
    # Another bot has its own quota.
    assert upload(other, samples["photo.png"], "a.png").status_code == 200


def test_a_full_quota_refuses_before_any_media_work(make_app, samples, monkeypatch):
    app = make_app(storage_quota_bytes=1)
    bot = bot_on(app)
    monkeypatch.setattr("botsvc.domain.files.process_upload",
                        lambda *a, **k: pytest.fail("no media work for a full quota"))
    db_settings = app.config["SETTINGS"]
    from botsvc.db import connect
    conn = connect(db_settings.db_path)
    conn.execute("INSERT INTO files (file_id, bot_id, kind, mime_type, file_name, file_size,"
                 " sha256, storage_name, created_at) VALUES (?, ?, 'document', 'text/plain',"
                 " 'x.txt', 1, 'x', ?, 0)", ("a" * 48, bot.id, "b" * 32))
    conn.close()
    body = assert_failure(upload(bot, samples["notes.txt"], "n.txt"), 400, "INVALID_PARAMETER")
    assert body["parameters"] == {"field": "file", "reason": "quota_exceeded"}


# -- rate -----------------------------------------------------------------------------

def test_ten_uploads_a_minute_then_429(make_app, samples, clock):
    # The clock stands still: ten scanned uploads on a loaded machine can take
    # longer than the minute whose window they fill.
    app = make_app(rate_uploads_per_min=10)
    bot = bot_on(app)
    for index in range(10):
        assert upload(bot, samples["notes.txt"], f"n{index}.txt").status_code == 200
    response = upload(bot, samples["notes.txt"], "n10.txt")
    body = assert_failure(response, 429, "RATE_LIMITED")
    assert body["parameters"]["retry_after"] >= 1
    assert response.headers["Retry-After"] == str(body["parameters"]["retry_after"])
    storage = Storage(app)
    assert len(storage.rows()) == 10 and storage.leftovers() == []
    # Other methods are not uploads.
    bot.ok("getMe")


# -- getFile ------------------------------------------------------------------------------

def test_get_file_adds_a_signed_link_valid_one_hour(bot, samples, app):
    file = upload(bot, samples["video.mp4"], "v.mp4").get_json()["result"]
    before = int(time.time())
    got = bot.ok("getFile", file_id=file["file_id"])
    assert set(got) == set(file) | {"download_url", "expires_at"}
    assert {k: got[k] for k in file} == file
    base = app.config["SETTINGS"].base_url
    match = re.match(rf"^{re.escape(base)}/download\.php\?id=([a-f0-9]{{48}})&exp=(\d+)"
                     r"&sig=([a-f0-9]{64})\Z", got["download_url"])
    assert match and match.group(1) == file["file_id"]
    assert int(match.group(2)) == got["expires_at"]
    assert before + 3600 <= got["expires_at"] <= int(time.time()) + 3600
    secret = app.config["SETTINGS"].secret_key
    assert match.group(3) == file_links.signature(secret, file["file_id"], bot.id,
                                                  got["expires_at"])


def test_get_file_of_another_bot_or_unknown(bot, new_bot, samples):
    other = new_bot()
    theirs = upload(other, samples["photo.png"], "a.png").get_json()["result"]["file_id"]
    for file_id in (theirs, "0" * 48, "not-a-file-id", "/etc/passwd", theirs.upper()):
        assert_invalid(bot.call("getFile", {"file_id": file_id}), "file_id")
    assert_invalid(bot.call("getFile", {}), "file_id")
    assert_invalid(bot.call("getFile", {"file_id": 5}), "file_id")
    assert_invalid(bot.call("getFile", {"file_id": theirs, "x": 1}), "x")
    assert other.ok("getFile", file_id=theirs)["file_id"] == theirs


def test_admin_token_is_not_a_bot_token(bot, samples):
    file_id = upload(bot, samples["photo.png"], "a.png").get_json()["result"]["file_id"]
    impostor = BotClient(bot.client, bot.bot, ADMIN_TOKEN)
    assert_failure(impostor.call("getFile", {"file_id": file_id}), 401, "UNAUTHORIZED")


def test_gif_variants(bot):
    one_frame = upload(bot, gif_bytes(frames=1), "still.gif").get_json()["result"]
    assert one_frame["kind"] == "animation" and one_frame["mime_type"] == "video/mp4"
