"""What a file claims to be and what libmagic says it is, and whether they agree.

Agreement is checked per container family, not per brand: an MP4 that
libmagic calls ``video/quicktime`` or ``audio/x-m4a`` is still the ISO media
family, and the real decoder (ffprobe with the demuxer forced) has the last
word. The declared MIME type is optional: ``None``, empty and
``application/octet-stream`` (what curl and most HTTP clients send when they
do not know) mean "not declared"; anything else must belong to the extension.
"""
from __future__ import annotations

import threading
from dataclasses import dataclass

from botsvc.errors import Reason, dependency_unavailable, media_rejected


@dataclass(frozen=True)
class Format:
    name: str              # family: jpeg png webp gif isobmff matroska mp3 ogg wav flac pdf text json
    group: str             # image, animation, av, pdf, text
    magic: frozenset[str]  # libmagic MIME types that count as this family
    demuxer: str | None = None  # the ffmpeg input format forced for it


def _f(name, group, magic, demuxer=None):
    return Format(name, group, frozenset(magic.split()), demuxer)


_TEXT_MAGIC = "text/plain text/csv application/csv application/json application/x-ndjson"

FORMATS = {
    f.name: f
    for f in (
        _f("jpeg", "image", "image/jpeg"),
        _f("png", "image", "image/png image/apng"),
        _f("webp", "image", "image/webp"),
        _f("gif", "animation", "image/gif", "gif"),
        _f("isobmff", "av", "video/mp4 video/quicktime video/x-m4v audio/x-m4a audio/mp4", "mov"),
        _f("matroska", "av", "video/x-matroska video/webm audio/webm audio/x-matroska", "matroska"),
        _f("mp3", "av", "audio/mpeg audio/x-mp3", "mp3"),
        _f("ogg", "av", "audio/ogg application/ogg audio/x-opus", "ogg"),
        _f("wav", "av", "audio/x-wav audio/wav audio/vnd.wave audio/wave", "wav"),
        _f("flac", "av", "audio/flac audio/x-flac", "flac"),
        _f("pdf", "pdf", "application/pdf"),
        _f("text", "text", _TEXT_MAGIC),
        _f("json", "text", _TEXT_MAGIC),
    )
}


@dataclass(frozen=True)
class Extension:
    format: Format
    declared: frozenset[str]  # MIME types a client may declare for it
    audio_only: bool = False  # the extension promises sound alone


def _e(fmt, declared, audio_only=False):
    return Extension(FORMATS[fmt], frozenset(declared.split()), audio_only)


_MP4 = "video/mp4 video/x-m4v application/mp4"
_MKV = "video/x-matroska audio/x-matroska video/matroska audio/matroska application/x-matroska"
_OGG = "audio/ogg application/ogg audio/x-ogg audio/vorbis audio/opus"

EXTENSIONS = {
    "jpg": _e("jpeg", "image/jpeg image/jpg image/pjpeg"),
    "jpeg": _e("jpeg", "image/jpeg image/jpg image/pjpeg"),
    "png": _e("png", "image/png image/x-png"),
    "webp": _e("webp", "image/webp"),
    "gif": _e("gif", "image/gif"),
    "mp4": _e("isobmff", _MP4),
    "m4v": _e("isobmff", _MP4),
    "mov": _e("isobmff", "video/quicktime"),
    "webm": _e("matroska", "video/webm audio/webm"),
    "mkv": _e("matroska", _MKV),
    "mp3": _e("mp3", "audio/mpeg audio/mp3 audio/mpeg3 audio/x-mpeg audio/x-mp3 audio/x-mpeg-3", True),
    "ogg": _e("ogg", _OGG, True),
    "oga": _e("ogg", _OGG, True),
    "opus": _e("ogg", "audio/opus audio/ogg", True),
    "wav": _e("wav", "audio/wav audio/x-wav audio/wave audio/vnd.wave audio/x-pn-wav", True),
    "flac": _e("flac", "audio/flac audio/x-flac", True),
    "m4a": _e("isobmff", "audio/mp4 audio/x-m4a audio/m4a", True),
    "pdf": _e("pdf", "application/pdf application/x-pdf"),
    "txt": _e("text", "text/plain"),
    "log": _e("text", "text/plain text/x-log"),
    # Browsers on Windows declare .csv as application/vnd.ms-excel; the
    # content is still checked as UTF-8 text.
    "csv": _e("text", "text/csv text/plain application/csv text/x-csv "
                      "text/comma-separated-values application/vnd.ms-excel"),
    "json": _e("json", "application/json text/json text/plain"),
}

UNDECLARED = frozenset({"", "application/octet-stream"})


def extension_info(ext: str, field: str) -> Extension:
    info = EXTENSIONS.get(ext)
    if info is None:
        raise media_rejected(field, Reason.UNSUPPORTED_TYPE, f"Files of type .{ext[:16]} are not accepted")
    return info


def check_declared(info: Extension, ext: str, declared: str | None, field: str) -> None:
    mime = (declared or "").split(";", 1)[0].strip().lower()
    if mime in UNDECLARED:
        return
    if mime not in info.declared:
        raise media_rejected(
            field, Reason.TYPE_MISMATCH, f"The declared type does not match the .{ext} extension"
        )


_magic_lock = threading.Lock()
_magic = None
_SNIFF_BYTES = 1024 * 1024


def sniff(path: str) -> str:
    """libmagic's MIME type for the first MiB of ``path``."""
    global _magic
    with open(path, "rb") as fh:
        head = fh.read(_SNIFF_BYTES)
    with _magic_lock:  # a libmagic handle is not thread-safe
        try:
            if _magic is None:
                import magic

                _magic = magic.Magic(mime=True)
            return _magic.from_buffer(head)
        except Exception as exc:  # ImportError, MagicException: libmagic unusable
            raise dependency_unavailable("libmagic", "libmagic is not available") from exc


def _accepted_anywhere(mime: str) -> bool:
    return any(mime in f.magic for f in FORMATS.values())


def check_content(info: Extension, ext: str, real_mime: str, field: str) -> None:
    if real_mime in info.format.magic:
        return
    if _accepted_anywhere(real_mime):
        raise media_rejected(field, Reason.TYPE_MISMATCH, f"The content does not match the .{ext} extension")
    # Executables, scripts, HTML, SVG, archives, Office files, unknown data.
    raise media_rejected(field, Reason.UNSUPPORTED_TYPE, f"Content of type {real_mime} is not accepted")
