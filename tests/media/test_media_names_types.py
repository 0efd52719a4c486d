"""File names, declared types and libmagic agreement."""
from __future__ import annotations

import io
import shutil

import pytest
from PIL import Image

from botsvc.media import names


def png_bytes(size=(16, 12), color="red") -> bytes:
    buf = io.BytesIO()
    Image.new("RGB", size, color).save(buf, "PNG")
    return buf.getvalue()


def jpeg_bytes(size=(16, 12)) -> bytes:
    buf = io.BytesIO()
    Image.new("RGB", size, "blue").save(buf, "JPEG")
    return buf.getvalue()


@pytest.mark.parametrize(
    "raw, stem, ext",
    [
        ("photo.JPG", "photo", "jpg"),
        ("../../etc/passwd.jpg", "passwd", "jpg"),
        ("C:\\Users\\me\\My Photo.png", "My Photo", "png"),
        ("my.vacation.2024.jpg", "my.vacation.2024", "jpg"),
        ("a\x00b\x1f\u202ec.png", "abc", "png"),
        ('we"ird*na:me?.png', "we_ird_na_me_", "png"),
        (".png", "file", "png"),
        ("  spaced   out .png. ", "spaced out", "png"),
    ],
)
def test_names_are_cleaned(raw, stem, ext):
    parsed = names.parse_name(raw, "file")
    assert (parsed.stem, parsed.ext) == (stem, ext)


def test_long_names_are_cut_on_a_character_boundary():
    parsed = names.parse_name("é" * 300 + ".png", "file")
    assert parsed.stem == "é" * 100


@pytest.mark.parametrize("raw", ["x.php.jpg", "a.exe.png", "invoice.PDF.exe.txt", "x.php\x00.jpg",
                                 "run.sh .mp3", "page.html.png", "x.svg.png"])
def test_unsafe_double_extensions(reject, raw):
    reject(png_bytes(), raw, "double_extension")


@pytest.mark.parametrize("raw", ["noextension", "", "x.exe", "x.svg", "x.html", "x.zip", "x.docm",
                                 "x.js", "x.bmp", "x.tiff", "x.heic"])
def test_extensions_outside_the_list(reject, raw):
    reject(png_bytes(), raw, "unsupported_type")


def test_display_name_gets_the_output_extension(upload):
    result = upload(jpeg_bytes(), "../secret/Holiday \u202egpj.JPEG")
    assert result.file_name == "Holiday gpj.jpg"


@pytest.mark.parametrize("declared", [None, "", "application/octet-stream", "image/png",
                                      "IMAGE/PNG; charset=binary"])
def test_declared_type_may_be_missing_or_must_match(upload, declared):
    assert upload(png_bytes(), "p.png", declared).kind == "photo"


@pytest.mark.parametrize("declared", ["image/jpeg", "text/html", "image/svg+xml", "video/mp4"])
def test_declared_type_disagreeing_with_the_extension(reject, declared):
    reject(png_bytes(), "p.png", "type_mismatch", declared)


def test_real_type_must_match_the_extension(reject):
    reject(png_bytes(), "p.jpg", "type_mismatch")
    reject(jpeg_bytes(), "p.png", "type_mismatch")
    reject(b"hello world\n", "p.mp4", "type_mismatch")


def test_executable_renamed_jpg(reject):
    with open(shutil.which("true"), "rb") as fh:
        elf = fh.read()
    assert elf.startswith(b"\x7fELF")
    reject(elf, "cat.jpg", "unsupported_type")


@pytest.mark.parametrize(
    "data, name",
    [
        (b'<svg xmlns="http://www.w3.org/2000/svg"><script>alert(1)</script></svg>', "x.png"),
        (b"<!DOCTYPE html><html><body><script>alert(1)</script></body></html>\n", "x.txt"),
        (b"<html><body>hi</body></html>\n", "x.jpg"),
        (b"#!/bin/sh\nrm -rf /\n", "x.txt"),
        (b"PK\x03\x04" + b"\x00" * 60, "x.csv"),
        (b"MZ\x90\x00\x03\x00\x00\x00\x04\x00\x00\x00\xff\xff" + b"\x00" * 300, "x.png"),
        (b"\xd0\xcf\x11\xe0\xa1\xb1\x1a\xe1" + b"\x00" * 600, "x.pdf"),
    ],
)
def test_forbidden_content_under_accepted_names(reject, data, name):
    reject(data, name, "unsupported_type")


def test_empty_file(reject):
    reject(b"", "x.png", "empty_file")


@pytest.mark.clamscan
def test_names_never_reach_a_command_line(upload, ffmpeg_make, monkeypatch, config):
    """The user's name appears in no argv and no working directory."""
    from botsvc.media import av, pdf, runner, scanner

    seen = []
    real = runner.run_tool

    def spy(argv, **kw):
        seen.append((list(argv), kw["cwd"]))
        return real(argv, **kw)

    for module in (av, scanner, pdf):
        monkeypatch.setattr(module, "run_tool", spy)
    evil = "$(touch pwned) -i http:;x.mp4"
    video = ffmpeg_make("n.mp4", "-f", "lavfi", "-i", "testsrc=size=64x48:rate=10", "-t", "0.5",
                        "-c:v", "libx264", "-preset", "ultrafast")
    result = upload(video, evil)
    assert result.file_name == "$(touch pwned) -i http_;x.mp4"
    assert len(seen) >= 4  # probe, convert, probe output, two scans
    for argv, cwd in seen:
        assert not any("pwned" in arg or "http" in arg for arg in argv), argv
        assert "pwned" not in cwd
        assert cwd.startswith(config.work_dir)

