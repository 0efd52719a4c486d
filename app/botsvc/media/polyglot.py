"""One file, one format: archives hidden in a file, and data after an image's end.

A polyglot is a file two readers take for two different things: a GIF that is
also a JAR (a "GIFAR"), a PDF with a ZIP appended, a PNG with a RAR inside a
chunk. What one program checked, another may open as something else, so such
a file is refused whatever its picture or sound looks like:

- ``polyglot``: the bytes hold an archive anywhere, head to tail: a ZIP local
  header, central directory entry or end record, RAR, 7z, xz, bzip2, CAB, tar
  or ar. ZIP headers are checked field by field (version, method, name
  length), so compressed data that merely contains ``PK\\3\\4`` is no archive:
  a false alarm is below one in a million per 100 MiB.
- ``trailing_data``: an image (JPEG, PNG, GIF, WebP) with more than
  ``TRAILING_TOLERANCE`` bytes after its end (JPEG EOI, PNG IEND, GIF trailer,
  the RIFF size of WebP), not counting padding (NUL, 0xFF, whitespace: what
  cameras and editors leave) nor the further pictures a JPEG's MPF index
  declares (multi-picture files: previews, depth maps, 3D pairs).

Text documents are not scanned: their own rules (strict UTF-8, no control
characters) already refuse every binary archive. Reading goes through mmap in
1 MiB steps, so a 100 MiB upload never sits in memory and other threads keep
the interpreter between steps.
"""
from __future__ import annotations

import mmap
import re
import struct

from botsvc.errors import Reason, media_rejected

from .detect import Format

TRAILING_TOLERANCE = 16
PADDING = b"\x00\xff\t\n\r "
_STEP = 1 << 20
_OVERLAP = 64  # more than any signature: a match across two steps is found once

_ARCHIVE = re.compile(
    rb"PK\x03\x04|PK\x01\x02|PK\x05\x06|Rar!\x1a\x07[\x00\x01]|7z\xbc\xaf\x27\x1c"
    rb"|\xfd7zXZ\x00|BZh[1-9]1AY&SY|MSCF\x00\x00\x00\x00|ustar(?:\x0000|  \x00)|!<arch>\n")
_ARCHIVE_NAMES = {b"Ra": "RAR", b"7z": "7z", b"\xfd7": "xz", b"BZ": "bzip2", b"MS": "CAB",
                  b"us": "tar", b"!<": "ar"}
# APPNOTE's compression methods (stored, shrunk ... zstd, MP3, xz, JPEG, WavPack, PPMd, AES).
_ZIP_METHODS = frozenset({0, 1, 2, 3, 4, 5, 6, 8, 9, 10, 12, 14, 18, 19, 20, 93, 94, 95,
                          96, 97, 98, 99})
_ZIP_MAX_VERSION = 63
_ZIP_MAX_NAME = 4096


def check_single_format(path: str, fmt: Format, field: str) -> None:
    """Refuse ``path`` if it is also an archive, or an image with data after its end."""
    if fmt.group == "text":
        return
    with open(path, "rb") as fh, mmap.mmap(fh.fileno(), 0, access=mmap.ACCESS_READ) as data:
        kind = find_archive(data)
        if kind is not None:
            raise media_rejected(field, Reason.POLYGLOT,
                                 f"The file is also a {kind} archive; send each file on its own")
        stray = stray_bytes_after_image(data, fmt.name)
        if stray is not None and stray > TRAILING_TOLERANCE:
            raise media_rejected(field, Reason.TRAILING_DATA,
                                 f"The image carries more than {TRAILING_TOLERANCE} bytes of"
                                 f" other data after its end")


# -- archives ----------------------------------------------------------------------

def find_archive(data) -> str | None:
    """The kind of the first archive found in ``data`` (bytes or mmap), or None."""
    size = len(data)
    for start in range(0, size, _STEP):
        for match in _ARCHIVE.finditer(data, start, min(size, start + _STEP + _OVERLAP)):
            if match.start() >= start + _STEP:
                break  # the next step finds it
            kind = _archive_at(data, match.start(), match.group())
            if kind is not None:
                return kind
    return None


def _archive_at(data, pos: int, signature: bytes) -> str | None:
    if not signature.startswith(b"PK"):
        return _ARCHIVE_NAMES[signature[:2]]
    try:
        if signature == b"PK\x03\x04":  # local file header
            version, _, method = struct.unpack_from("<HHH", data, pos + 4)
            name_length = struct.unpack_from("<H", data, pos + 26)[0]
            name_at = pos + 30
        elif signature == b"PK\x01\x02":  # central directory entry
            version, _, method = struct.unpack_from("<HHH", data, pos + 6)
            name_length = struct.unpack_from("<H", data, pos + 28)[0]
            name_at = pos + 46
        else:  # end of central directory: one disk, entries counted alike
            disk, cd_disk, here, total = struct.unpack_from("<HHHH", data, pos + 4)
            return "ZIP" if disk == cd_disk == 0 and here == total else None
    except struct.error:
        return None  # cut off by the end of the file
    name = data[name_at:name_at + name_length]
    if (version <= _ZIP_MAX_VERSION and method in _ZIP_METHODS
            and 0 < name_length <= _ZIP_MAX_NAME and len(name) == name_length
            and b"\x00" not in name):
        return "ZIP"
    return None


# -- where an image ends -----------------------------------------------------------

def stray_bytes_after_image(data, fmt: str) -> int | None:
    """How many bytes that are not padding follow the image (and the pictures
    it declares); None when ``fmt`` is no image or its structure cannot be
    followed to its end (truncated or broken: the decoder judges it)."""
    if fmt == "jpeg":
        return _jpeg_stray(data)
    end = {"png": _png_end, "gif": _gif_end, "webp": _webp_end}.get(fmt, lambda _: None)(data)
    return None if end is None else _stray(data, end, len(data))


def _stray(data, start: int, stop: int) -> int:
    count = 0
    for pos in range(start, stop, _STEP):
        count += len(data[pos:min(stop, pos + _STEP)].translate(None, PADDING))
        if count > TRAILING_TOLERANCE:
            break
    return count


def _png_end(data) -> int | None:
    if data[:8] != b"\x89PNG\r\n\x1a\n":
        return None
    pos, size = 8, len(data)
    while pos + 12 <= size:
        length = int.from_bytes(data[pos:pos + 4], "big")
        end = pos + 12 + length  # length, type, data, CRC
        if length > 0x7FFFFFFF or end > size:
            return None
        if data[pos + 4:pos + 8] == b"IEND":
            return end
        pos = end
    return None


def _color_table(packed: int) -> int:
    return 3 << ((packed & 7) + 1) if packed & 0x80 else 0


def _gif_end(data) -> int | None:
    size = len(data)
    if data[:6] not in (b"GIF87a", b"GIF89a") or size < 13:
        return None
    pos = 13 + _color_table(data[10])
    while pos < size:
        block = data[pos]
        if block == 0x3B:  # trailer
            return pos + 1
        if block == 0x21:  # extension: introducer, label, sub-blocks
            pos += 2
        elif block == 0x2C and pos + 10 <= size:  # image: descriptor, table, LZW size
            pos += 10 + _color_table(data[pos + 9]) + 1
        else:
            return None
        while pos < size and data[pos]:  # sub-blocks up to the empty one
            pos += 1 + data[pos]
        pos += 1
    return None


def _webp_end(data) -> int | None:
    if data[:4] != b"RIFF" or data[8:12] != b"WEBP":
        return None
    end = 8 + int.from_bytes(data[4:8], "little")
    return end if end <= len(data) else None


# JPEG: markers without a length (RST0-7, TEM), and what ends the picture.
_STANDALONE = frozenset(range(0xD0, 0xD8)) | {0x01}
_SOS, _EOI, _APP2 = 0xDA, 0xD9, 0xE2


def _jpeg_stray(data) -> int | None:
    """Bytes outside the primary picture and the further pictures its MPF
    index lists (each must itself be a JPEG with a scan, where it says)."""
    first = _jpeg_walk(data, 0)
    if first is None:
        return None
    cursor, mpf_header, _ = first
    stray = 0
    for start, length in sorted(_mpf_pictures(data, mpf_header)) if mpf_header else ():
        picture = _jpeg_walk(data, start) if start >= cursor else None
        if picture is None or not picture[2] or picture[0] > start + length:
            break  # not the picture the index promised: the rest counts as trailing
        stray += _stray(data, cursor, start)
        cursor = picture[0]
    return stray + _stray(data, cursor, len(data))


def _jpeg_walk(data, pos: int) -> tuple[int, int | None, bool] | None:
    """(offset after EOI, offset of the MPF header or None, whether a scan was
    seen) for the JPEG at ``pos``, following segment lengths and scans."""
    size = len(data)
    if data[pos:pos + 2] != b"\xff\xd8":
        return None
    pos, mpf_header, scanned = pos + 2, None, False
    while pos < size and data[pos] == 0xFF:
        while pos < size and data[pos] == 0xFF:  # fill bytes before a marker
            pos += 1
        if pos >= size:
            return None
        marker = data[pos]
        pos += 1
        if marker == _EOI:
            return pos, mpf_header, scanned
        if marker in _STANDALONE:
            continue
        length = int.from_bytes(data[pos:pos + 2], "big")
        if marker in (0x00, 0xD8) or length < 2 or pos + length > size:
            return None
        if marker == _APP2 and mpf_header is None and data[pos + 2:pos + 6] == b"MPF\x00":
            mpf_header = pos + 6  # MPF offsets count from its byte-order mark
        pos += length
        if marker == _SOS:
            scanned = True
            pos = _scan_end(data, pos)
    return None


def _scan_end(data, pos: int) -> int:
    """The offset of the marker that ends the entropy-coded data at ``pos``
    (``len(data)`` if none does)."""
    size = len(data)
    while True:
        pos = data.find(b"\xff", pos)
        if pos < 0 or pos + 1 >= size:
            return size
        following = data[pos + 1]
        if following == 0x00 or following in range(0xD0, 0xD8):  # stuffing, restart
            pos += 2
        elif following == 0xFF:
            pos += 1
        else:
            return pos


def _mpf_pictures(data, header: int) -> list[tuple[int, int]]:
    """(offset, size) of the pictures after the first that an MPF index lists."""
    order = {b"II*\x00": "<", b"MM\x00*": ">"}.get(data[header:header + 4])
    if order is None:
        return []
    try:
        ifd = header + struct.unpack_from(order + "I", data, header + 4)[0]
        for index in range(min(struct.unpack_from(order + "H", data, ifd)[0], 64)):
            tag, _, count, value = struct.unpack_from(order + "HHII", data, ifd + 2 + 12 * index)
            if tag == 0xB002:  # MP Entry: 16 bytes per picture, the first is this one
                entries = header + value
                found = []
                for number in range(1, min(count // 16, 64)):
                    _, length, offset = struct.unpack_from(order + "III", data,
                                                           entries + 16 * number)
                    if length and offset:
                        found.append((header + offset, length))
                return found
    except struct.error:
        pass
    return []
