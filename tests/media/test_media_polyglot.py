"""One file, one format (issue 13 point 6): a file whose bytes are also an
archive is ``polyglot``; an image with data after its end beyond a small
tolerance is ``trailing_data``; what cameras and editors really leave (padding,
a multi-picture JPEG's further pictures, an EXIF thumbnail) still passes.
Every file is made at test time."""
from __future__ import annotations

import io
import os
import random
import struct
import zlib

import pytest
from PIL import Image

from botsvc.media.polyglot import TRAILING_TOLERANCE, find_archive
from tests.support.media_files import gif_bytes, image_bytes, multipart, pdf_bytes


def jar_bytes() -> bytes:
    """A JAR: a ZIP with a manifest and a class file."""
    import zipfile

    buf = io.BytesIO()
    with zipfile.ZipFile(buf, "w", zipfile.ZIP_DEFLATED) as jar:
        jar.writestr("META-INF/MANIFEST.MF", "Manifest-Version: 1.0\nMain-Class: A\n")
        jar.writestr("A.class", b"\xca\xfe\xba\xbe" + bytes(200))
    return buf.getvalue()


def png_chunk(kind: bytes, body: bytes) -> bytes:
    return (struct.pack(">I", len(body)) + kind + body
            + struct.pack(">I", zlib.crc32(kind + body) & 0xFFFFFFFF))


def with_png_chunk(png: bytes, kind: bytes, body: bytes) -> bytes:
    """``png`` with one more chunk just before IEND."""
    iend = png.rindex(b"IEND") - 4
    return png[:iend] + png_chunk(kind, body) + png[iend:]


def with_jpeg_segment(jpeg: bytes, marker: int, body: bytes) -> bytes:
    """``jpeg`` with one more segment right after SOI."""
    return jpeg[:2] + bytes([0xFF, marker]) + struct.pack(">H", len(body) + 2) + body + jpeg[2:]


def mpo_bytes() -> bytes:
    """A multi-picture JPEG as cameras write it: the primary, an MPF index in
    APP2, and a second picture after the first one's EOI."""
    buf = io.BytesIO()
    Image.new("RGB", (64, 48), "red").save(buf, "MPO", save_all=True,
                                           append_images=[Image.new("RGB", (32, 24), "blue")])
    return buf.getvalue()


# -- archives: polyglot --------------------------------------------------------------

@pytest.mark.parametrize("name, make", [
    ("gifar.gif", lambda: gif_bytes() + jar_bytes()),
    ("zip-after.png", lambda: image_bytes("PNG") + jar_bytes()),
    ("zip-after.jpg", lambda: image_bytes("JPEG") + jar_bytes()),
    ("zip-after.webp", lambda: image_bytes("WEBP") + jar_bytes()),
    ("zip-after.pdf", lambda: pdf_bytes() + jar_bytes()),
    # Inside: a private PNG chunk, a JPEG comment, a GIF comment extension.
    ("zip-in-chunk.png", lambda: with_png_chunk(image_bytes("PNG"), b"zIPx", jar_bytes())),
    ("zip-in-comment.jpg", lambda: with_jpeg_segment(image_bytes("JPEG"), 0xFE, jar_bytes())),
])
def test_a_file_that_is_also_a_zip_is_refused(reject, name, make):
    err = reject(make(), name, "polyglot")
    assert "ZIP" in err.description


def test_a_video_with_an_archive_appended_is_refused(reject, samples):
    reject(samples["video.mp4"] + jar_bytes(), "clip.mp4", "polyglot")


# The same bytes in every run (and every xdist worker collects the same test ids).
NOISE = random.Random(20261126).randbytes(64)


@pytest.mark.parametrize("archive, kind", [
    (b"Rar!\x1a\x07\x01\x00" + NOISE, "RAR"),
    (b"Rar!\x1a\x07\x00" + NOISE, "RAR"),
    (b"7z\xbc\xaf\x27\x1c\x00\x04" + NOISE, "7z"),
    (b"\xfd7zXZ\x00\x00\x04" + NOISE, "xz"),
    (b"BZh91AY&SY" + NOISE, "bzip2"),
    (b"MSCF\x00\x00\x00\x00" + NOISE, "CAB"),
    (bytes(257) + b"ustar\x0000" + bytes(247), "tar"),
    (b"!<arch>\n" + NOISE, "ar"),
], ids=["rar5", "rar4", "7z", "xz", "bzip2", "cab", "tar", "ar"])
def test_other_archives_are_found(reject, archive, kind):
    assert find_archive(image_bytes("PNG") + archive) == kind
    reject(with_png_chunk(image_bytes("PNG"), b"arCh", archive), "hidden.png", "polyglot")


def test_zip_signatures_in_ordinary_bytes_are_no_archive(upload):
    # "PK\3\4" and "PK\5\6" followed by what no ZIP writer produces (an
    # impossible version, method, name length or disk number): data, not a header.
    lookalikes = (b"PK\x03\x04\xff\xff\x00\x00\x63\x00" + os.urandom(20)
                  + b"PK\x01\x02\x14\x00\x14\x00\x00\x00\x07\x00" + bytes(40)
                  + b"PK\x05\x06\x01\x00\x02\x00\x01\x00\x03\x00" + bytes(10))
    assert find_archive(lookalikes) is None
    png = with_png_chunk(image_bytes("PNG"), b"daTa", lookalikes)
    assert upload(png, "lookalike.png").kind == "photo"


# -- data after the end: trailing_data -------------------------------------------------

@pytest.mark.parametrize("name, make", [
    ("after.png", lambda: image_bytes("PNG") + os.urandom(1024)),
    ("after.jpg", lambda: image_bytes("JPEG") + b"<?php system($_GET['c']); ?>"),
    ("after.gif", lambda: gif_bytes() + b"alert(document.cookie)//" * 4),
    ("after.webp", lambda: image_bytes("WEBP") + b"x" * 64),
    ("after-second-picture.jpg", lambda: mpo_bytes() + b"payload after the MPF pictures"),
])
def test_data_after_the_end_of_an_image_is_refused(reject, name, make):
    reject(make(), name, "trailing_data")


@pytest.mark.parametrize("ext, fmt", [("png", "PNG"), ("jpg", "JPEG"), ("webp", "WEBP")])
def test_the_tolerance_is_exact(upload, reject, ext, fmt):
    image = image_bytes(fmt)
    assert upload(image + b"z" * TRAILING_TOLERANCE, f"edge.{ext}").kind == "photo"
    reject(image + b"z" * (TRAILING_TOLERANCE + 1), f"over.{ext}", "trailing_data")


# -- what real files carry still passes ----------------------------------------------

@pytest.mark.parametrize("name, make", [
    ("zero-padded.jpg", lambda: image_bytes("JPEG") + bytes(4096)),
    ("ff-padded.jpg", lambda: image_bytes("JPEG") + b"\xff" * 512),
    ("newline.png", lambda: image_bytes("PNG") + b"\r\n"),
    ("padded.webp", lambda: image_bytes("WEBP") + bytes(100)),
    ("progressive.jpg", lambda: image_bytes_with("JPEG", progressive=True) + bytes(8)),
])
def test_padding_after_the_end_passes(upload, name, make):
    assert upload(make(), name).kind == "photo"


def test_padding_after_a_gif_passes(upload):
    assert upload(gif_bytes() + bytes(1000), "padded.gif").kind == "animation"


def image_bytes_with(fmt: str, **options) -> bytes:
    buf = io.BytesIO()
    Image.effect_noise((48, 32), 40).convert("RGB").save(buf, fmt, **options)
    return buf.getvalue()


def test_a_multi_picture_jpeg_passes_with_its_primary_picture(upload):
    data = mpo_bytes()
    assert data.count(b"\xff\xd8") == 2 and b"MPF\x00" in data
    result = upload(data + bytes(16), "camera.jpg")
    assert (result.kind, result.metadata) == ("photo", {"width": 64, "height": 48})


def test_an_exif_thumbnail_does_not_end_the_picture_early(upload):
    # The thumbnail is a whole JPEG (SOI ... EOI) inside APP1: the end is the
    # primary picture's EOI, found by following segment lengths.
    thumbnail = image_bytes("JPEG", size=(8, 8))
    data = with_jpeg_segment(image_bytes("JPEG"), 0xE1, b"Exif\x00\x00" + thumbnail)
    assert upload(data, "with-thumbnail.jpg").kind == "photo"


def test_text_documents_are_left_to_their_own_rules(upload):
    text = b"PKZIP and 7z are archivers; tar files say ustar. BZh91AY&SY is bzip2.\n"
    assert upload(text, "notes.txt").kind == "document"


# -- over HTTP ---------------------------------------------------------------------

def test_a_gifar_upload_is_refused_and_nothing_is_stored(bot, storage):
    response = multipart(bot, "uploadFile", {"file": (gif_bytes() + jar_bytes(), "cat.gif")})
    body = response.get_json()
    assert response.status_code == 400 and body["error_code"] == "INVALID_PARAMETER", body
    assert body["parameters"] == {"field": "file", "reason": "polyglot"}
    storage.assert_nothing_stored()
