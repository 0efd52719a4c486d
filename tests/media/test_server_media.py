"""Files through the real server (scripts/server: gunicorn, 2 threaded
workers): the offline signature database at start, upload, a media send, the
download streamed with ranges, and no signed link in the log."""
from __future__ import annotations

import glob
import hashlib
from urllib.parse import urlsplit

import pytest
import requests

from botsvc.devkit.servers import running_server

pytestmark = pytest.mark.server


def test_upload_send_and_download_through_gunicorn(tmp_path, samples):
    system_db = glob.glob("/var/lib/clamav/*.c[vl]d")
    env = {"BOTSVC_ACCESS_LOG": "1", "BOTSVC_CLAMAV_DB": "", "BOTSVC_CLAMD_SOCKET": ""}
    with running_server(tmp_path, **env) as server:
        created = server.operator("createBot", username="server_media_bot")
        auth = {"Authorization": f"Bearer {created['token']}"}
        user = server.operator("createUser")["user_id"]
        chat_id = server.operator("userStart", user_id=user, bot_id=created["bot"]["id"]
                                  )["chat_id"]
        video = samples["video.mp4"]
        uploaded = requests.post(f"{server.base_url}/v2/uploadFile", headers=auth, timeout=60,
                                 files={"file": ("clip.mp4", video, "video/mp4")})
        assert uploaded.status_code == 200, uploaded.text
        file = uploaded.json()["result"]
        sent = requests.post(f"{server.base_url}/v2/sendPhoto", headers=auth, timeout=60,
                             data={"chat_id": chat_id, "caption": "direct"},
                             files={"photo": ("p.jpg", samples["photo.jpg"], "image/jpeg")})
        assert sent.status_code == 200, sent.text
        assert sent.json()["result"]["type"] == "photo"
        link = requests.post(f"{server.base_url}/v2/getFile", headers=auth, timeout=30,
                             json={"file_id": file["file_id"]}).json()["result"]["download_url"]
        url = server.base_url + urlsplit(link).path + "?" + urlsplit(link).query
        whole = requests.get(url, timeout=30)
        assert whole.status_code == 200
        assert hashlib.sha256(whole.content).hexdigest() == file["sha256"]
        assert whole.headers["Content-Length"] == str(file["file_size"])
        part = requests.get(url, headers={"Range": "bytes=-100"}, timeout=30)
        assert part.status_code == 206 and part.content == whole.content[-100:]
        head = requests.head(url, timeout=30)
        assert head.status_code == 200 and head.content == b""
        assert head.headers["Content-Length"] == str(file["file_size"])
        bad = requests.get(url, headers={"Range": "bytes=0-1,4-5"}, timeout=30)
        assert bad.status_code == 416
        assert bad.headers["Content-Range"] == f"bytes */{file['file_size']}"
        log = server.log_path.read_text(errors="replace")
    sig = urlsplit(link).query.split("sig=")[1]
    assert "/download.php" in log and sig not in log and file["file_id"] not in log
    if not system_db:
        assert "WARNING: NO REAL VIRUS SIGNATURES" in log
        assert (server.data_dir / "clamav-test-db").is_dir()


def _multipart_of_exact_size(total: int) -> tuple[bytes, str]:
    boundary = "exactsizeboundary"
    head = (f"--{boundary}\r\nContent-Disposition: form-data; name=\"file\"; "
            f"filename=\"notes.txt\"\r\nContent-Type: text/plain\r\n\r\n").encode()
    tail = f"\r\n--{boundary}--\r\n".encode()
    body = head + b"a" * (total - len(head) - len(tail)) + tail
    assert len(body) == total
    return body, f"multipart/form-data; boundary={boundary}"


@pytest.mark.parametrize("chunked", [False, True], ids=["content-length", "chunked"])
def test_a_body_of_exactly_the_upload_ceiling_is_accepted_one_byte_more_is_not(
        tmp_path, chunked):
    # Only gunicorn's terminated input stream showed the off-by-one.
    ceiling = 20000
    with running_server(tmp_path, BOTSVC_UPLOAD_MAX_BYTES=ceiling) as server:
        token = server.operator("createBot", username="ceiling_bot")["token"]
        for size, status in ((ceiling, 200), (ceiling + 1, 413)):
            body, content_type = _multipart_of_exact_size(size)
            data = iter([body]) if chunked else body
            answer = requests.post(f"{server.base_url}/v2/uploadFile", data=data, timeout=60,
                                   headers={"Authorization": f"Bearer {token}",
                                            "Content-Type": content_type})
            assert answer.status_code == status, answer.text
            if status == 413:
                assert answer.json()["error_code"] == "REQUEST_TOO_LARGE"
