"""TXT, CSV, LOG and JSON: strict UTF-8, no controls, no active markup."""
from __future__ import annotations

import pytest

from botsvc.errors import ApiError
from botsvc.media.text import MAX_BYTES, normalize_text


@pytest.mark.parametrize(
    "name, mime",
    [("notes.txt", "text/plain"), ("data.csv", "text/csv"), ("app.log", "text/plain"),
     ("doc.json", "application/json")],
)
def test_accepted_text_documents(upload, name, mime):
    data = {"notes.txt": "Grüße, 日本語 and a < b > c\r\n\tindented\n",
            "data.csv": "a,b,c\n1,2,3\n",
            "app.log": 'Traceback (most recent call last):\n  File "<stdin>", line 1, in <module>\n',
            "doc.json": '{"a": [1, 2.5, "x"], "b": null}\n'}[name].encode()
    result = upload(data, name)
    assert (result.kind, result.mime_type, result.file_name) == ("document", mime, name)
    assert open(result.path, "rb").read() == data
    assert result.file_size == len(data)


def test_bom_is_removed_not_rejected(upload):
    result = upload(b"\xef\xbb\xbfhello\n", "bom.txt", "text/plain")
    assert open(result.path, "rb").read() == b"hello\n"
    assert result.file_size == 6


def test_csv_declared_by_windows_browsers(upload):
    assert upload(b"a,b\n1,2\n", "x.csv", "application/vnd.ms-excel").mime_type == "text/csv"


@pytest.mark.parametrize(
    "data",
    [b"caf\xe9 au lait\n", b"ok \xed\xa0\x80 surrogate\n", b"truncated \xe2\x82\n", b"\xff\xfeh\x00i\x00"],
)
def test_invalid_utf8(reject, data):
    reject(data, "bad.txt", "text_invalid")


def rule(tmp_path, data: bytes, ext: str = "txt"):
    """The text rules alone, without libmagic in front of them."""
    src = tmp_path / "in"
    src.write_bytes(data)
    out = tmp_path / "out"
    out.mkdir(exist_ok=True)
    with pytest.raises(ApiError) as info:
        normalize_text(str(src), ext, str(out), "file")
    return info.value.parameters["reason"]


@pytest.mark.parametrize("char", ["\x00", "\x07", "\x1b[31m", "\x0c", "\x7f", "\u0085", "\u202e", "\u2066"])
def test_control_characters(tmp_path, char):
    assert rule(tmp_path, f"line one\nline {char}two\n".encode()) == "text_invalid"


def test_control_characters_through_the_pipeline(reject):
    reject(b"colour \x1b[31mred\x1b[0m\n", "ctl.log", "text_invalid")
    # libmagic already calls text with DEL or NUL binary.
    reject(b"del \x7f here\n", "ctl.log", "unsupported_type")


@pytest.mark.parametrize(
    "text",
    [
        "notes: <script>alert(1)</script>\n",
        "x <img src=x onerror=alert(1)> y\n",
        "see <a href='javascript:alert(1)'>here</a>\n",
        "embed: <iframe src=//evil.test></iframe>\n",
        "tail </SCRIPT >\n",
        "php <?php system($_GET['c']); ?>\n",
        "doc <?xml version='1.0'?><x/>\n",
        "a,b\n1,<svg onload=alert(1)>\n",
        "<!doctype html>\n",
        "<img/src=x/onerror=alert(1)>\n",
        "<details/open/ontoggle=alert(1)>\n",
        "hello <body/onload=alert(1)>\n",
        "<a href=\"x\"onclick=alert(1)>x</a>\n",
        '{"note": "<img/src=x/onerror=alert(1)>"}\n',
    ],
)
def test_active_markup(tmp_path, text):
    assert rule(tmp_path, text.encode()) == "active_markup"


@pytest.mark.parametrize("text", ["a < b and c > d\n", "<br> and <b>bold</b>\n", "<module> <stdin>\n",
                                  "<frozen importlib._bootstrap>\n", "onerror=1 outside a tag\n",
                                  "<config on_error=retry>\n", "<button>on=off</button>\n"])
def test_harmless_angle_brackets(tmp_path, text):
    (tmp_path / "in").write_bytes(text.encode())
    (tmp_path / "out").mkdir()
    assert normalize_text(str(tmp_path / "in"), "txt", str(tmp_path / "out"), "file").mime == "text/plain"


def test_active_markup_through_the_pipeline(reject):
    reject(b"x <img src=x onerror=alert(1)> y\n", "m.txt", "active_markup")
    reject(b"a,b\n1,<svg onload=alert(1)>\n", "m.csv", "active_markup")
    # What libmagic recognises as HTML never reaches the text rules.
    reject(b"notes: <script>alert(1)</script>\n", "m.txt", "unsupported_type")


def test_json_must_parse(reject):
    reject(b'{"a": 1,}\n', "x.json", "text_invalid")
    reject(b'{"a": NaN}\n', "x.json", "text_invalid")
    reject(b"[" * 100_000 + b"]" * 100_000, "deep.json", "text_invalid")


def test_size_limit(upload, reject):
    line = b"0123456789abcdef" * 4 + b"\n"
    exact = (line * (MAX_BYTES // len(line) + 1))[:MAX_BYTES - 1] + b"\n"
    assert len(exact) == MAX_BYTES
    assert upload(exact, "big.log").file_size == MAX_BYTES
    reject(exact + b"x", "big.log", "text_too_large")


def test_empty_after_bom(reject):
    reject(b"\xef\xbb\xbf", "bom.txt", "empty_file")
