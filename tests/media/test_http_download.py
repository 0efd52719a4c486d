"""GET and HEAD /download.php: bearer and signed modes, refusals in the
contract's envelope, the headers the contract fixes, single byte ranges."""
from __future__ import annotations

import hashlib
import time
from urllib.parse import parse_qs, urlencode, urlsplit

import pytest

from botsvc.domain import file_links
from tests.support.contract import assert_failure, assert_invalid
from tests.support.media_files import multipart

TEXT = ("".join(f"line {n:04d} of a plain text document\n" for n in range(100))).encode()
SIZE = len(TEXT)


@pytest.fixture
def text_file(bot):
    response = multipart(bot, "uploadFile", {"file": (TEXT, "notes.txt")})
    assert response.status_code == 200, response.get_json()
    return response.get_json()["result"]


def signed_path(bot, file_id: str) -> str:
    url = urlsplit(bot.ok("getFile", file_id=file_id)["download_url"])
    return f"{url.path}?{url.query}"


def bearer_get(bot, file_id: str | None, method: str = "GET", headers: dict | None = None,
               **query):
    params = {"file_id": file_id, **query} if file_id is not None else query
    return bot.client.open(f"/download.php?{urlencode(params)}", method=method,
                           headers={"Authorization": f"Bearer {bot.token}", **(headers or {})})


def expected_headers(file: dict, length: int) -> dict:
    return {
        "Content-Type": file["mime_type"],
        "Content-Length": str(length),
        "X-Content-Type-Options": "nosniff",
        "Content-Disposition": f"attachment; filename=\"{file['file_name']}\"; "
                               f"filename*=UTF-8''{file['file_name']}",
        "Accept-Ranges": "bytes",
        "ETag": f'"{file["sha256"]}"',
    }


def assert_headers(response, expected: dict) -> None:
    for name, value in expected.items():
        assert response.headers.get(name) == value, (name, dict(response.headers))


# -- the two modes ---------------------------------------------------------------

def test_signed_link_downloads_the_stored_bytes(bot, text_file):
    response = bot.client.get(signed_path(bot, text_file["file_id"]))
    assert response.status_code == 200
    assert response.data == TEXT
    assert hashlib.sha256(response.data).hexdigest() == text_file["sha256"]
    assert_headers(response, expected_headers(text_file, SIZE))


def test_bearer_mode_downloads_too(bot, text_file):
    response = bearer_get(bot, text_file["file_id"])
    assert response.status_code == 200 and response.data == TEXT
    assert_headers(response, expected_headers(text_file, SIZE))


def test_head_has_the_same_headers_and_no_body(bot, text_file):
    for response in (bot.client.head(signed_path(bot, text_file["file_id"])),
                     bearer_get(bot, text_file["file_id"], method="HEAD")):
        assert response.status_code == 200
        assert response.data == b""
        assert_headers(response, expected_headers(text_file, SIZE))


def test_a_media_download_is_exact(bot, samples):
    photo = multipart(bot, "uploadFile", {"file": (samples["photo.jpg"], "photo.jpg")}
                      ).get_json()["result"]
    response = bot.client.get(signed_path(bot, photo["file_id"]))
    assert response.status_code == 200
    assert hashlib.sha256(response.data).hexdigest() == photo["sha256"]
    assert response.headers["Content-Type"] == "image/jpeg"


def test_unsafe_names_get_an_ascii_fallback_and_rfc5987(bot):
    name = "résumé final; 100%.txt"
    file = multipart(bot, "uploadFile", {"file": (TEXT, name)}).get_json()["result"]
    assert file["file_name"] == name
    response = bearer_get(bot, file["file_id"], method="HEAD")
    assert response.headers["Content-Disposition"] == (
        "attachment; filename=\"r_sum_ final; 100_.txt\"; "
        "filename*=UTF-8''r%C3%A9sum%C3%A9%20final%3B%20100%25.txt")


def test_content_disposition_escapes_quotes_and_backslashes():
    from botsvc.file_response import content_disposition

    assert content_disposition('a"b\\c.txt') == (
        "attachment; filename=\"a_b_c.txt\"; filename*=UTF-8''a%22b%5Cc.txt")


# -- refusals --------------------------------------------------------------------

def test_expired_link(bot, text_file, app):
    secret = app.config["SETTINGS"].secret_key
    exp = int(time.time()) - 1
    query = urlencode({"id": text_file["file_id"], "exp": exp,
                       "sig": file_links.signature(secret, text_file["file_id"], bot.id, exp)})
    body = assert_failure(bot.client.get(f"/download.php?{query}"), 401, "UNAUTHORIZED")
    assert "expired" in body["description"]


def tampered(path: str, **changes) -> str:
    url = urlsplit(path)
    query = {k: v[0] for k, v in parse_qs(url.query).items()}
    query.update(changes)
    return f"{url.path}?{urlencode({k: v for k, v in query.items() if v is not None})}"


def test_tampered_links(bot, text_file, samples):
    other = multipart(bot, "uploadFile", {"file": (samples["photo.png"], "p.png")}
                      ).get_json()["result"]
    path = signed_path(bot, text_file["file_id"])
    query = parse_qs(urlsplit(path).query)
    sig, exp = query["sig"][0], query["exp"][0]
    flipped = ("0" if sig[0] != "0" else "1") + sig[1:]
    for bad in (tampered(path, sig=flipped), tampered(path, sig=sig.upper()),
                tampered(path, sig=sig[:-2]), tampered(path, sig=None),
                tampered(path, exp=str(int(exp) + 1)), tampered(path, exp=None),
                tampered(path, exp="-1"), tampered(path, exp="0" + exp),
                tampered(path, id=other["file_id"]),
                tampered(path, id="0" * 48), tampered(path, id=None),
                tampered(path, sig="ü" * 64)):
        assert_failure(bot.client.get(bad), 401, "UNAUTHORIZED")
    assert_failure(bot.client.get(path + "&sig=" + sig), 401, "UNAUTHORIZED")  # repeated


def test_a_link_is_a_capability_of_its_file_only(bot, new_bot, text_file):
    other = new_bot()
    path = signed_path(bot, text_file["file_id"])
    assert other.client.get(path, headers={"Authorization": f"Bearer {other.token}"}
                            ).status_code == 200
    # Bearer mode: another bot's file is not found, like an unknown one.
    for file_id in (text_file["file_id"], "0" * 48, "x" * 48, "../../etc/passwd"):
        body = assert_failure(bearer_get(other, file_id), 404, "FILE_NOT_FOUND")
        assert body["parameters"] == {"field": "file_id"}


def test_bearer_mode_refusals(bot, text_file):
    no_token = bot.client.get(f"/download.php?file_id={text_file['file_id']}")
    assert_failure(no_token, 401, "UNAUTHORIZED")
    bad = bot.client.get(f"/download.php?file_id={text_file['file_id']}",
                         headers={"Authorization": f"Bearer {bot.token[:-1]}x"})
    assert_failure(bad, 401, "UNAUTHORIZED")
    assert_failure(bot.client.get("/download.php"), 401, "UNAUTHORIZED")
    assert_invalid(bearer_get(bot, None), "file_id")
    assert_invalid(bearer_get(bot, ""), "file_id")
    assert_invalid(bearer_get(bot, text_file["file_id"], extra="1"), "extra")


def test_disabled_bot_and_platform(bot, operator, text_file):
    path = signed_path(bot, text_file["file_id"])
    operator("setBotDisabled", bot_id=bot.id, disabled=True)
    assert_failure(bot.client.get(path), 403, "BOT_DISABLED")
    assert_failure(bearer_get(bot, text_file["file_id"]), 403, "BOT_DISABLED")
    operator("setBotDisabled", bot_id=bot.id, disabled=False)
    operator("setPlatformDisabled", disabled=True)
    assert_failure(bot.client.get(path), 503, "PLATFORM_DISABLED")
    assert_failure(bearer_get(bot, text_file["file_id"]), 503, "PLATFORM_DISABLED")
    operator("setPlatformDisabled", disabled=False)
    assert bot.client.get(path).status_code == 200


def test_other_http_methods(bot, text_file):
    path = signed_path(bot, text_file["file_id"])
    for method in ("POST", "PUT", "DELETE", "OPTIONS"):
        assert_failure(bot.client.open(path, method=method), 405, "METHOD_NOT_ALLOWED")


# -- ranges ----------------------------------------------------------------------

@pytest.mark.parametrize("header, first, last", [
    ("bytes=0-0", 0, 0),
    ("bytes=0-1023", 0, 1023),
    ("bytes=-5", SIZE - 5, SIZE - 1),
    ("bytes=5-", 5, SIZE - 1),
    ("bytes=100-99999", 100, SIZE - 1),
    (f"bytes=-{SIZE + 10}", 0, SIZE - 1),
    (f"bytes={SIZE - 1}-{SIZE - 1}", SIZE - 1, SIZE - 1),
    ("bytes=0-" + "9" * 30, 0, SIZE - 1),
    ("bytes=-" + "9" * 30, 0, SIZE - 1),
    ("BYTES=1-2", 1, 2),
])
def test_one_range_is_206(bot, text_file, header, first, last):
    assert SIZE > 1024
    for method in ("GET", "HEAD"):
        response = bearer_get(bot, text_file["file_id"], method=method,
                              headers={"Range": header})
        assert response.status_code == 206
        assert response.headers["Content-Range"] == f"bytes {first}-{last}/{SIZE}"
        assert_headers(response, expected_headers(text_file, last - first + 1))
        assert response.data == (TEXT[first:last + 1] if method == "GET" else b"")


@pytest.mark.parametrize("header", [
    f"bytes={SIZE}-", f"bytes={SIZE}-{SIZE + 5}", "bytes=0-1,3-4", "bytes=0-1, 5-6",
    "bytes=abc", "bytes=5-2", "bytes=-0", "bytes=-", "bytes=", "items=0-1", "0-1",
    "bytes=1-2-3", "bytes=" + "9" * 30 + "-",
])
def test_anything_else_is_416(bot, text_file, header):
    for method in ("GET", "HEAD"):
        response = bearer_get(bot, text_file["file_id"], method=method,
                              headers={"Range": header})
        assert response.status_code == 416
        assert response.headers["Content-Range"] == f"bytes */{SIZE}"
        if method == "GET":
            assert_failure(response, 416, "RANGE_NOT_SATISFIABLE")


def test_if_range_with_another_etag_sends_the_whole_file(bot, text_file):
    etag = f'"{text_file["sha256"]}"'
    fresh = bearer_get(bot, text_file["file_id"], headers={"Range": "bytes=0-9",
                                                            "If-Range": etag})
    assert fresh.status_code == 206 and fresh.data == TEXT[:10]
    stale = bearer_get(bot, text_file["file_id"], headers={"Range": "bytes=0-9",
                                                            "If-Range": '"other"'})
    assert stale.status_code == 200 and stale.data == TEXT


def test_the_file_is_streamed_not_read_whole(bot):
    large = TEXT * 40   # 160 KB
    uploaded = multipart(bot, "uploadFile", {"file": (large, "large.txt")}).get_json()["result"]
    for headers, expected in (({}, large), ({"Range": "bytes=10-"}, large[10:])):
        response = bearer_get(bot, uploaded["file_id"], headers=headers)
        chunks = list(response.response)
        assert len(chunks) > 10 and max(len(chunk) for chunk in chunks) <= 64 * 1024
        assert b"".join(chunks) == expected


def test_cache_validators_change_nothing_the_answers_are_200_206_416(bot, text_file):
    etag = f'"{text_file["sha256"]}"'
    for headers in ({"If-None-Match": etag}, {"If-Modified-Since": "Fri, 01 Jan 2100 00:00:00 GMT"},
                    {"If-Match": '"other"'}, {"If-Unmodified-Since": "Thu, 01 Jan 1970 00:00:00 GMT"}):
        whole = bearer_get(bot, text_file["file_id"], headers=headers)
        assert (whole.status_code, whole.data) == (200, TEXT), headers
        assert "Last-Modified" not in whole.headers
        part = bearer_get(bot, text_file["file_id"], headers={**headers, "Range": "bytes=0-9"})
        assert (part.status_code, part.data) == (206, TEXT[:10]), headers
