"""Still images: size checked from the header, then decoded and re-encoded.

Pillow parses only the header in ``Image.open``; width, height and their
product are checked before ``load()`` decodes a single pixel. Pillow's own
bomb guard only warns below twice ``MAX_IMAGE_PIXELS``, so it is a backstop
here, not the rule. Re-encoding drops EXIF, XMP, comments and text chunks;
the EXIF orientation is applied first and an ICC profile is converted to
sRGB so colours survive the loss of the profile.
"""
from __future__ import annotations

import io
import os
from dataclasses import dataclass

from PIL import Image, ImageOps

from botsvc.errors import Reason, media_rejected

MAX_SIDE = 8192
MAX_PIXELS = 16_000_000
_MAX_ICC_BYTES = 1024 * 1024

# Decoders allowed per family; MPO is how Pillow names multi-picture JPEGs.
_PIL_FORMATS = {"jpeg": ("JPEG",), "png": ("PNG",), "webp": ("WEBP",)}
_ACCEPT_AS = {"jpeg": {"JPEG", "MPO"}, "png": {"PNG"}, "webp": {"WEBP"}}
_OUTPUT = {"jpeg": ("JPEG", "jpg", "image/jpeg"), "png": ("PNG", "png", "image/png"),
           "webp": ("WEBP", "webp", "image/webp")}


@dataclass
class ImageResult:
    path: str
    ext: str
    mime: str
    metadata: dict


def check_dimensions(width: int, height: int, field: str, max_side: int, max_pixels: int) -> None:
    if width <= 0 or height <= 0:
        raise media_rejected(field, Reason.DIMENSIONS, "The image has no size")
    if width > max_side or height > max_side or width * height > max_pixels:
        raise media_rejected(
            field,
            Reason.DIMENSIONS,
            f"The image is {width}x{height}; at most {max_side} per side and "
            f"{max_pixels} pixels are accepted",
        )


def _open(path: str, fmt: str, field: str) -> Image.Image:
    # Pillow's DecompressionBombWarning is left alone (catching it would
    # touch the process-wide warnings filters); the size check follows.
    try:
        im = Image.open(path, formats=_PIL_FORMATS[fmt])
    except Image.DecompressionBombError:
        raise media_rejected(field, Reason.DIMENSIONS, "The image is too large") from None
    except Exception:
        raise media_rejected(field, Reason.CORRUPT_FILE, "The image cannot be decoded") from None
    if im.format not in _ACCEPT_AS[fmt]:
        im.close()
        raise media_rejected(field, Reason.TYPE_MISMATCH, "The image content does not match its type")
    return im


def _has_alpha(im: Image.Image) -> bool:
    return im.mode in ("RGBA", "LA", "PA") or (im.mode == "P" and "transparency" in im.info)


def _to_srgb(im: Image.Image) -> Image.Image:
    icc = im.info.get("icc_profile")
    if not icc or len(icc) > _MAX_ICC_BYTES:
        return im
    try:
        from PIL import ImageCms

        src = ImageCms.ImageCmsProfile(io.BytesIO(icc))
        mode = "RGBA" if _has_alpha(im) else "RGB"
        if im.mode not in ("RGB", "RGBA", "CMYK", "L"):
            im = im.convert(mode)
        return ImageCms.profileToProfile(im, src, ImageCms.createProfile("sRGB"), outputMode=mode)
    except Exception:
        # A broken or exotic profile is dropped; the pixels are kept as they are.
        return im


def _output_mode(im: Image.Image, fmt: str) -> Image.Image:
    if fmt == "jpeg":
        return im if im.mode in ("RGB", "L") else im.convert("RGB")
    if fmt == "png" and im.mode in ("1", "L", "LA", "RGB", "RGBA"):
        return im
    return im.convert("RGBA" if _has_alpha(im) else "RGB")


def normalize_image(src: str, fmt: str, out_dir: str, field: str) -> ImageResult:
    im = _open(src, fmt, field)
    with im:
        check_dimensions(im.width, im.height, field, MAX_SIDE, MAX_PIXELS)
        if fmt in ("png", "webp") and getattr(im, "n_frames", 1) > 1:
            # Never silently cut an animation to its first frame.
            raise media_rejected(
                field, Reason.ANIMATED_IMAGE, "Animated PNG and WebP images are not accepted; send a GIF or MP4"
            )
        try:
            im.load()
            out = ImageOps.exif_transpose(im)
            out = _output_mode(_to_srgb(out), fmt)
        except (OSError, ValueError, SyntaxError, EOFError, Image.DecompressionBombError):
            raise media_rejected(field, Reason.CORRUPT_FILE, "The image cannot be decoded") from None
        # Some encoders fall back to im.info (PNG writes its ICC profile from
        # there): start from an empty one so nothing but pixels is written.
        out.info = {}
        pil_format, ext, mime = _OUTPUT[fmt]
        path = os.path.join(out_dir, f"out.{ext}")
        options = {"quality": 90} if pil_format in ("JPEG", "WEBP") else {}
        out.save(path, format=pil_format, **options)
        return ImageResult(path, ext, mime, {"width": out.width, "height": out.height})
