"""Small real media files made at test time (Pillow, pikepdf, ffmpeg's lavfi
test sources), and the multipart helpers that send them over HTTP. Imported
by module name (``from media_files import sample_bytes``)."""
from __future__ import annotations

import io
import os
import subprocess
from pathlib import Path

import pikepdf
from PIL import Image

from botsvc.media.signatures import eicar_bytes
from tests.support.contract import BotClient, Operator

SRC = ["-f", "lavfi", "-i", "testsrc=size=160x120:rate=25", "-f", "lavfi", "-i",
       "sine=f=440:r=48000"]
TONE = ["-f", "lavfi", "-i", "sine=f=440:r=48000"]
H264 = ["-c:v", "libx264", "-preset", "ultrafast"]


def run_ffmpeg(path: Path, *args: str) -> Path:
    subprocess.run(["ffmpeg", "-hide_banner", "-loglevel", "error", "-nostdin", "-y", *args,
                    str(path)], check=True, timeout=120)
    return path


def image_bytes(fmt: str, size=(24, 16), color="red") -> bytes:
    buf = io.BytesIO()
    Image.new("RGB", size, color).save(buf, fmt)
    return buf.getvalue()


def gif_bytes(frames: int = 2, size=(16, 16)) -> bytes:
    pictures = [Image.new("P", size, index) for index in range(frames)]
    buf = io.BytesIO()
    pictures[0].save(buf, "GIF", save_all=True, append_images=pictures[1:], duration=100,
                     loop=0)
    return buf.getvalue()


def pdf_bytes(javascript: bool = False) -> bytes:
    pdf = pikepdf.new()
    pdf.add_blank_page(page_size=(200, 200))
    if javascript:
        pdf.Root.OpenAction = pikepdf.Dictionary(S=pikepdf.Name.JavaScript,
                                                 JS=pikepdf.String("app.alert(1)"))
    buf = io.BytesIO()
    pdf.save(buf)
    return buf.getvalue()


def png_header_only(width: int, height: int) -> bytes:
    """A PNG that claims a size and has no pixels: a bomb is refused before decoding."""
    import struct
    import zlib

    def chunk(kind: bytes, body: bytes) -> bytes:
        return (struct.pack(">I", len(body)) + kind + body
                + struct.pack(">I", zlib.crc32(kind + body) & 0xFFFFFFFF))

    header = struct.pack(">IIBBBBB", width, height, 8, 2, 0, 0, 0)
    return b"\x89PNG\r\n\x1a\n" + chunk(b"IHDR", header) + chunk(b"IEND", b"")


# name -> (how to make it, kind of the normalized file). ffmpeg-made samples
# take the ffmpeg arguments; the others are bytes.
FFMPEG_SAMPLES = {
    "video.mp4": [*SRC, "-t", "0.5", *H264, "-c:a", "aac"],
    "song.mp3": [*TONE, "-t", "0.5"],
    "tone.wav": [*TONE, "-t", "0.5"],
    "silent.mp4": [*SRC[:4], "-t", "0.5", *H264],
}
BYTE_SAMPLES = {
    "photo.jpg": lambda: image_bytes("JPEG"),
    "photo.png": lambda: image_bytes("PNG"),
    "photo.webp": lambda: image_bytes("WEBP"),
    "anim.gif": lambda: gif_bytes(),
    "doc.pdf": lambda: pdf_bytes(),
    "notes.txt": lambda: b"plain notes\nsecond line\n",
    "table.csv": lambda: b"a,b\n1,2\n",
    "data.json": lambda: b'{"ok": true}\n',
}
KIND_OF = {"photo.jpg": "photo", "photo.png": "photo", "photo.webp": "photo",
           "anim.gif": "animation", "video.mp4": "video", "silent.mp4": "video",
           "song.mp3": "audio", "tone.wav": "audio", "doc.pdf": "document",
           "notes.txt": "document", "table.csv": "document", "data.json": "document"}


class Samples:
    """``samples["video.mp4"]`` -> bytes, each made once into ``directory``."""
    def __init__(self, directory: Path):
        self.directory = directory
        self.made: dict[str, bytes] = {}

    def __getitem__(self, name: str) -> bytes:
        if name not in self.made:
            if name in FFMPEG_SAMPLES:
                path = run_ffmpeg(self.directory / name, *FFMPEG_SAMPLES[name])
                self.made[name] = path.read_bytes()
            else:
                self.made[name] = BYTE_SAMPLES[name]()
        return self.made[name]


EICAR = eicar_bytes()


def multipart(bot, method: str, files: dict[str, tuple[bytes, str] | tuple[bytes, str, str]],
              headers: dict | None = None, **params):
    """POST ``method`` as multipart/form-data: ``files`` maps a field to
    (bytes, file name[, declared type]); ``params`` are text fields (dicts
    and numbers are sent as JSON text, as a client would)."""
    import json

    data: dict = {}
    for name, spec in files.items():
        content, file_name, *declared = spec
        data[name] = (io.BytesIO(content), file_name, *(declared or ["application/octet-stream"]))
    for name, value in params.items():
        data[name] = value if isinstance(value, str) else json.dumps(value)
    return bot.call(method, data=data, content_type="multipart/form-data", headers=headers)


class Storage:
    """What an upload left on disk and in the database, for 'nothing stored'."""
    def __init__(self, app):
        self.settings = app.config["SETTINGS"]
        self.data_dir = Path(self.settings.data_dir)
        self.quarantine = Path(app.config["QUARANTINE_DIR"])
        self.work_dir = Path(app.config["MEDIA"].work_dir)

    def rows(self) -> list:
        from botsvc.db import connect

        conn = connect(self.settings.db_path)
        try:
            return conn.execute("SELECT * FROM files ORDER BY id").fetchall()
        finally:
            conn.close()

    def stored_names(self) -> list[str]:
        files_dir = self.data_dir / "files"
        return sorted(os.listdir(files_dir)) if files_dir.exists() else []

    def leftovers(self) -> list[str]:
        """Anything in quarantine or in the work dir once a request is over."""
        found = [f"quarantine/{n}" for n in os.listdir(self.quarantine)]
        if self.work_dir.exists():
            found += [f"work/{n}" for n in os.listdir(self.work_dir)]
        return found

    def assert_nothing_stored(self, rows_before: int = 0) -> None:
        assert len(self.rows()) == rows_before
        assert len(self.stored_names()) == rows_before
        assert self.leftovers() == []


def bot_on(app, username: str = "media_bot"):
    """A bot on ``app`` (for tests that need their own settings)."""
    operator = Operator(app.test_client())
    created = operator("createBot", username=username)
    return BotClient(operator.client, created["bot"], created["token"])
