"""Audio, video and GIF: kinds decided by streams, limits, conversion."""
from __future__ import annotations

import shutil
import socket
import struct
import subprocess
import threading

import magic
import pytest

from botsvc.errors import ApiError, ErrorCode
from botsvc.media import av
from botsvc.media.detect import EXTENSIONS

SRC = ["-f", "lavfi", "-i", "testsrc=size=160x120:rate=25", "-f", "lavfi", "-i", "sine=f=440:r=48000"]
TONE = ["-f", "lavfi", "-i", "sine=f=440:r=48000"]
H264 = ["-c:v", "libx264", "-preset", "ultrafast"]


# One short file per accepted container: name -> ffmpeg arguments, or the
# name of a clip it is a copy of (another extension of the same container).
CLIPS = {
    "v.mp4": [*SRC, "-t", "0.5", *H264, "-c:a", "aac", "-metadata", "title=SECRET-TITLE"],
    "v.mov": [*SRC, "-t", "0.5", *H264, "-c:a", "aac"],
    "v.webm": [*SRC, "-t", "0.5", "-c:v", "libvpx", "-deadline", "realtime", "-c:a", "libopus"],
    "v.mkv": [*SRC, "-t", "0.5", *H264, "-c:a", "flac"],
    "a.webm": [*TONE, "-t", "0.5", "-c:a", "libopus"],
    "a.mkv": [*TONE, "-t", "0.5", "-c:a", "flac"],
    "a.m4a": [*TONE, "-t", "0.5", "-c:a", "aac", "-brand", "mp42"],
    "a.mp4": [*TONE, "-t", "0.5", "-c:a", "aac"],
    "a.mp3": [*TONE, "-t", "0.5"],
    "a.ogg": [*TONE, "-t", "0.5", "-c:a", "libvorbis"],
    "a.opus": [*TONE, "-t", "0.5", "-c:a", "libopus"],
    "a.wav": [*TONE, "-t", "0.5", "-ac", "6"],
    "a.flac": [*TONE, "-t", "0.5"],
    "v.m4v": "v.mp4",
    "a.oga": "a.ogg",
}


class Clips:
    """``clips[name]``: the file, made on first use and kept for the session
    (an xdist worker makes only the clips of the tests it runs)."""

    def __init__(self, ffmpeg_make, media_dir):
        self.ffmpeg_make, self.media_dir = ffmpeg_make, media_dir

    def __getitem__(self, name: str):
        recipe = CLIPS[name]
        if isinstance(recipe, list):
            return self.ffmpeg_make(name, *recipe)
        copy = self.media_dir / name
        if not copy.exists():
            shutil.copyfile(self[recipe], copy)
        return copy


@pytest.fixture(scope="session")
def clips(ffmpeg_make, media_dir):
    return Clips(ffmpeg_make, media_dir)


def streams(info, kind):
    return [s for s in info["streams"] if s["codec_type"] == kind]


@pytest.mark.parametrize("name", ["v.mp4", "v.m4v", "v.mov", "v.webm", "v.mkv"])
def test_videos_become_h264_aac_mp4(upload, clips, probe_file, name):
    result = upload(clips[name], name)
    stem = name.split(".")[0]
    assert (result.kind, result.mime_type, result.file_name) == ("video", "video/mp4", f"{stem}.mp4")
    assert result.metadata["width"] == 160 and result.metadata["height"] == 120
    assert 0.4 < result.metadata["duration"] < 0.7
    info = probe_file(result.path)
    assert "mp4" in info["format"]["format_name"]
    (video,), (audio,) = streams(info, "video"), streams(info, "audio")
    assert (video["codec_name"], video["pix_fmt"], audio["codec_name"]) == ("h264", "yuv420p", "aac")
    assert "SECRET-TITLE" not in str(info)


@pytest.mark.parametrize("name", ["a.webm", "a.mkv", "a.m4a", "a.mp4", "a.mp3", "a.ogg", "a.oga",
                                  "a.opus", "a.wav", "a.flac"])
def test_audio_becomes_opus_in_ogg(upload, clips, probe_file, name):
    result = upload(clips[name], name)
    assert (result.kind, result.mime_type, result.file_name) == ("audio", "audio/ogg", "a.ogg")
    assert set(result.metadata) == {"duration"} and 0.4 < result.metadata["duration"] < 0.7
    info = probe_file(result.path)
    assert info["format"]["format_name"] == "ogg"
    assert [s["codec_name"] for s in info["streams"]] == ["opus"]
    assert info["streams"][0]["channels"] <= 2  # the 6-channel WAV is downmixed


def test_libmagic_calls_m4a_and_audio_webm_video_but_streams_decide(clips, upload):
    assert magic.from_file(str(clips["a.m4a"]), mime=True) == "video/mp4"
    assert magic.from_file(str(clips["a.webm"]), mime=True) == "video/webm"
    assert upload(clips["a.m4a"], "a.m4a").kind == "audio"
    assert upload(clips["a.webm"], "a.webm").kind == "audio"


def test_cover_art_is_not_video(ffmpeg_make, upload, probe_file):
    cover = ffmpeg_make("cover.png", "-f", "lavfi", "-i", "testsrc=size=32x32", "-frames:v", "1")
    song = ffmpeg_make("song.mp3", *TONE, "-i", str(cover), "-t", "0.5", "-map", "0:a", "-map", "1:v",
                       "-c:v", "png", "-disposition:v", "attached_pic")
    assert streams(probe_file(song), "video")
    result = upload(song, "song.mp3")
    assert result.kind == "audio"
    assert not streams(probe_file(result.path), "video")


def test_video_under_an_audio_extension(clips, reject):
    reject(clips["v.mp4"], "song.m4a", "type_mismatch")


def test_gifs_become_animation_mp4_even_one_frame(ffmpeg_make, upload, probe_file):
    many = ffmpeg_make("many.gif", "-f", "lavfi", "-i", "testsrc=size=64x48:rate=10", "-t", "1")
    one = ffmpeg_make("one.gif", "-f", "lavfi", "-i", "testsrc=size=64x48", "-frames:v", "1")
    for path, frames in ((many, 10), (one, 1)):
        result = upload(path, "fun.gif", "image/gif")
        assert (result.kind, result.mime_type, result.file_name) == ("animation", "video/mp4", "fun.mp4")
        (video,) = probe_file(result.path)["streams"]
        assert video["codec_name"] == "h264" and int(video["nb_frames"]) == frames
        assert result.metadata["width"] == 64 and result.metadata["height"] == 48


def test_output_fits_1920_and_30_fps(ffmpeg_make, upload, probe_file):
    # Wider than 1920 and 60 fps; a short strip is enough (a 2000x1000 source
    # took seconds to make and convert, for the same two facts).
    fast = ffmpeg_make("fast.mkv", "-f", "lavfi", "-i", "testsrc=size=2000x200:rate=60", "-t", "0.5",
                       *H264)
    result = upload(fast, "fast.mkv")
    assert (result.metadata["width"], result.metadata["height"]) == (1920, 192)
    (video,) = probe_file(result.path)["streams"]
    num, den = map(int, video["avg_frame_rate"].split("/"))
    assert num / den <= 30.0


def test_source_size_limits(ffmpeg_make, upload, reject):
    edge = ffmpeg_make("edge.mp4", "-f", "lavfi", "-i", "testsrc=size=4096x64:rate=5", "-t", "0.2", *H264)
    assert upload(edge, "edge.mp4").metadata["width"] == 1920
    wide = ffmpeg_make("wide.mp4", "-f", "lavfi", "-i", "testsrc=size=4098x64:rate=5", "-t", "0.2", *H264)
    reject(wide, "wide.mp4", "dimensions")
    many = ffmpeg_make("many.mp4", "-f", "lavfi", "-i", "testsrc=size=4096x2076:rate=5", "-frames:v", "1",
                       *H264)  # 8,503,296 pixels
    reject(many, "many.mp4", "dimensions")


def test_six_streams_pass_seven_do_not(ffmpeg_make, upload, reject):
    def mkv(name, audio_streams):
        maps = ["-map", "0:v"] + ["-map", "1:a"] * audio_streams
        return ffmpeg_make(name, *SRC, "-t", "0.3", *maps, *H264, "-c:a", "flac")

    assert upload(mkv("six.mkv", 5), "six.mkv").kind == "video"
    reject(mkv("seven.mkv", 6), "seven.mkv", "streams")


def test_subtitles_are_dropped(ffmpeg_make, media_dir, upload, probe_file):
    srt = media_dir / "s.srt"
    srt.write_text("1\n00:00:00,000 --> 00:00:00,400\nhello\n")
    subbed = ffmpeg_make("subbed.mkv", *SRC, "-i", str(srt), "-t", "0.5", "-map", "0:v", "-map", "1:a",
                         "-map", "2:s", *H264, "-c:a", "flac", "-c:s", "srt")
    result = upload(subbed, "subbed.mkv")
    assert sorted(s["codec_type"] for s in probe_file(result.path)["streams"]) == ["audio", "video"]


def wav_header(data_bytes: int, rate: int = 8000) -> bytes:
    return (b"RIFF" + struct.pack("<I", 36 + data_bytes) + b"WAVEfmt "
            + struct.pack("<IHHIIHH", 16, 1, 1, rate, rate, 1, 8) + b"data" + struct.pack("<I", data_bytes))


def test_zero_duration_audio(reject):
    reject(wav_header(0), "silence.wav", "duration")


def test_longer_than_1800_seconds(reject):
    # 1801 s of 8 kHz 8-bit mono: a real 14 MB file, rejected from the probe.
    reject(wav_header(8000 * 1801) + b"\x80" * (8000 * 1801), "long.wav", "duration")


def test_long_gif(reject):
    def frame(delay_cs):
        gce = b"\x21\xf9\x04\x00" + struct.pack("<H", delay_cs) + b"\x00\x00"
        return gce + b"\x2c\x00\x00\x00\x00\x01\x00\x01\x00\x00\x02\x02\x44\x01\x00"

    gif = (b"GIF89a\x01\x00\x01\x00\x80\x00\x00\x00\x00\x00\xff\xff\xff"
           + b"".join(frame(65535) for _ in range(3)) + b"\x3b")  # 3 x 655 s
    reject(gif, "long.gif", "duration")


def test_corrupt_mp4(reject):
    data = b"\x00\x00\x00\x18ftypmp42\x00\x00\x00\x00mp42isom" + b"\x00\x00\x00\x10mdat" + b"\xff" * 500
    reject(data, "broken.mp4", "corrupt_file")


class Listener:
    """A TCP port that records whether anything ever connects to it."""

    def __init__(self):
        self.sock = socket.socket()
        self.sock.bind(("127.0.0.1", 0))
        self.sock.listen(5)
        self.sock.settimeout(0.2)
        self.port = self.sock.getsockname()[1]
        self.connections = 0
        self.stop = threading.Event()
        self.thread = threading.Thread(target=self._run, daemon=True)
        self.thread.start()

    def _run(self):
        while not self.stop.is_set():
            try:
                conn, _ = self.sock.accept()
            except OSError:
                continue
            self.connections += 1
            conn.close()

    def close(self):
        self.stop.set()
        self.thread.join()
        self.sock.close()


def test_playlist_disguised_as_mp4_opens_nothing(ffmpeg_make, tmp_path, config, reject):
    segment = ffmpeg_make("seg.ts", *SRC, "-t", "0.5", *H264, "-c:a", "aac", "-f", "mpegts")
    listener = Listener()
    try:
        playlist = (f"#EXTM3U\n#EXT-X-TARGETDURATION:1\n#EXTINF:1,\n{segment}\n"
                    f"#EXTINF:1,\nhttp://127.0.0.1:{listener.port}/x.ts\n#EXT-X-ENDLIST\n").encode()
        path = tmp_path / "playlist.mp4"
        path.write_bytes(playlist)
        # Control: left to guess the format, ffprobe follows the playlist and
        # reads the local segment it names. This is the attack.
        raw = subprocess.run(["ffprobe", "-v", "error", "-show_streams", "-of", "json", str(path)],
                             capture_output=True, timeout=60)
        assert b'"codec_name": "h264"' in raw.stdout
        before = listener.connections
        # The upload is refused at the type check ...
        reject(playlist, "movie.mp4", "type_mismatch")
        # ... and even the decoder step alone, with the demuxer forced, reads
        # neither the segment nor the URL: it finds no MP4 and says so.
        job = tmp_path / "job"
        job.mkdir()
        shutil.copyfile(path, job / "in")
        with pytest.raises(ApiError) as info:
            av.probe(config, str(job), "in", EXTENSIONS["mp4"].format.demuxer, "file")
        assert info.value.code is ErrorCode.INVALID_PARAMETER
        assert info.value.parameters["reason"] == "corrupt_file"
        assert listener.connections == before
    finally:
        listener.close()
