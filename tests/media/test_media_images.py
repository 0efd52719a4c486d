"""Photos: limits from the header, re-encoding, metadata stripped."""
from __future__ import annotations

import io
import struct
import zlib

import pytest
from PIL import Image, ImageCms
from PIL.PngImagePlugin import PngInfo


def encode(im: Image.Image, fmt: str, **kw) -> bytes:
    buf = io.BytesIO()
    im.save(buf, fmt, **kw)
    return buf.getvalue()


def png_header_only(width: int, height: int) -> bytes:
    """A PNG whose IHDR claims width x height but that carries no pixels:
    decoding it would fail, so only a header check can name the size."""

    def chunk(kind: bytes, body: bytes) -> bytes:
        return struct.pack(">I", len(body)) + kind + body + struct.pack(">I", zlib.crc32(kind + body))

    ihdr = struct.pack(">IIBBBBB", width, height, 8, 2, 0, 0, 0)
    return (b"\x89PNG\r\n\x1a\n" + chunk(b"IHDR", ihdr)
            + chunk(b"IDAT", zlib.compress(b"\x00" * 16)) + chunk(b"IEND", b""))


def opened(result) -> Image.Image:
    im = Image.open(result.path)
    im.load()
    return im


def test_jpeg_is_reencoded_with_orientation_applied_and_exif_gone(upload):
    exif = Image.Exif()
    exif[0x0112] = 6          # Orientation: rotate 90 degrees clockwise to display
    exif[0x010F] = "SpyCam"   # Make
    exif[0x8825] = {1: "N", 2: (48.0, 51.0, 24.0)}  # GPS
    im = Image.new("RGB", (40, 20), "green")
    result = upload(encode(im, "JPEG", exif=exif.tobytes()), "p.jpg", "image/jpeg")
    assert (result.kind, result.mime_type, result.file_name) == ("photo", "image/jpeg", "p.jpg")
    assert result.metadata == {"width": 20, "height": 40}
    out = opened(result)
    assert out.format == "JPEG" and out.size == (20, 40)
    assert len(out.getexif()) == 0
    data = open(result.path, "rb").read()
    assert b"Exif" not in data and b"SpyCam" not in data


def test_png_text_chunks_and_icc_profile_are_dropped_alpha_kept(upload):
    info = PngInfo()
    info.add_text("Comment", "secret-comment")
    srgb = ImageCms.ImageCmsProfile(ImageCms.createProfile("sRGB")).tobytes()
    im = Image.new("RGBA", (30, 10), (255, 0, 0, 128))
    result = upload(encode(im, "PNG", pnginfo=info, icc_profile=srgb), "a.png")
    assert (result.kind, result.mime_type) == ("photo", "image/png")
    data = open(result.path, "rb").read()
    assert b"secret-comment" not in data and b"iCCP" not in data and b"tEXt" not in data
    out = opened(result)
    assert out.mode == "RGBA" and out.getpixel((0, 0)) == (255, 0, 0, 128)


def test_webp_stays_webp(upload):
    result = upload(encode(Image.new("RGB", (20, 20), "blue"), "WEBP"), "w.webp", "image/webp")
    assert (result.kind, result.mime_type, result.file_name) == ("photo", "image/webp", "w.webp")
    assert opened(result).format == "WEBP"


def test_cmyk_jpeg_becomes_rgb(upload):
    result = upload(encode(Image.new("CMYK", (8, 8), (0, 255, 255, 0)), "JPEG"), "c.jpeg")
    out = opened(result)
    assert out.mode == "RGB" and result.file_name == "c.jpg"


def test_sha256_and_size_describe_the_output(upload):
    import hashlib

    result = upload(encode(Image.new("RGB", (9, 9)), "PNG"), "s.png")
    data = open(result.path, "rb").read()
    assert result.file_size == len(data)
    assert result.sha256 == hashlib.sha256(data).hexdigest()


def test_exactly_8192_per_side_is_accepted(upload):
    result = upload(encode(Image.new("L", (8192, 2)), "PNG"), "wide.png")
    assert result.metadata == {"width": 8192, "height": 2}
    result = upload(encode(Image.new("L", (2, 8192)), "PNG"), "tall.png")
    assert result.metadata == {"width": 2, "height": 8192}


def test_8193_pixels_on_a_side_is_rejected(reject):
    reject(encode(Image.new("L", (8193, 2)), "PNG"), "wide.png", "dimensions")
    reject(encode(Image.new("L", (2, 8193)), "PNG"), "tall.png", "dimensions")


def test_exactly_16_million_pixels_is_accepted(upload):
    result = upload(encode(Image.new("1", (4000, 4000)), "PNG"), "big.png")
    assert result.metadata == {"width": 4000, "height": 4000}


@pytest.mark.parametrize("size", [(4001, 4000), (5000, 4000), (8192, 8192)])
def test_pixel_count_is_checked_from_the_header_before_decoding(reject, size):
    # Below Pillow's own bomb threshold (89 M pixels): only our check sees it,
    # and it must fire before decoding (which would say corrupt_file).
    reject(png_header_only(*size), "bomb.png", "dimensions")


def test_decompression_bomb_header(reject):
    reject(png_header_only(100_000, 100_000), "bomb.png", "dimensions")


def test_decompression_bomb_with_real_pixels(reject):
    # 6,000 x 6,000 grey pixels: tens of KiB of zlib, 36 MB once decoded.
    side = 6_000
    packer = zlib.compressobj(9)
    row = b"\x00" * (side + 1)
    body = b"".join(packer.compress(row) for _ in range(side)) + packer.flush()

    def chunk(kind, data):
        return struct.pack(">I", len(data)) + kind + data + struct.pack(">I", zlib.crc32(kind + data))

    png = (b"\x89PNG\r\n\x1a\n" + chunk(b"IHDR", struct.pack(">IIBBBBB", side, side, 8, 0, 0, 0, 0))
           + chunk(b"IDAT", body) + chunk(b"IEND", b""))
    assert len(png) < 200_000
    assert Image.open(io.BytesIO(png)).size == (side, side)  # a valid image
    reject(png, "bomb.png", "dimensions")


def test_animated_webp_and_png_are_rejected_not_cut(reject):
    frames = [Image.new("RGB", (10, 10), c) for c in ("red", "blue", "green")]
    webp = encode(frames[0], "WEBP", save_all=True, append_images=frames[1:], duration=100)
    apng = encode(frames[0], "PNG", save_all=True, append_images=frames[1:], duration=100)
    reject(webp, "a.webp", "animated_image")
    reject(apng, "a.png", "animated_image")


def test_truncated_jpeg(reject):
    data = encode(Image.effect_noise((64, 64), 50).convert("RGB"), "JPEG")
    reject(data[: len(data) // 2], "t.jpg", "corrupt_file")


def test_palette_png_keeps_its_transparency(upload):
    im = Image.new("P", (4, 4), 0)
    im.putpalette([255, 0, 0, 0, 0, 255] + [0] * 762)
    im.putpixel((1, 1), 1)
    result = upload(encode(im, "PNG", transparency=0), "pal.png")
    out = opened(result)
    assert out.mode == "RGBA"
    assert out.getpixel((0, 0))[3] == 0 and out.getpixel((1, 1)) == (0, 0, 255, 255)
