"""Audio, video and GIF: probed with ffprobe, converted with ffmpeg.

Both tools always get the input demuxer forced from the agreed type and
``-protocol_whitelist file``: without ``-f`` a text HLS playlist renamed
``.mp4`` is opened by the hls demuxer, which then reads every local file (or
URL) it lists. The input is the fixed name ``in`` inside the job directory.
ffprobe's streams decide the kind, never libmagic: an ``mp42`` M4A or an
audio-only WebM is audio.
"""
from __future__ import annotations

import json
import os
from dataclasses import dataclass

from botsvc.errors import Reason, media_rejected

from .config import MediaConfig
from .detect import Extension
from .images import check_dimensions
from .runner import out_of_memory, run_tool, tool_failed

MAX_DURATION = 1800.0
MAX_STREAMS = 6
SOURCE_MAX_SIDE = 4096
SOURCE_MAX_PIXELS = 8_500_000
OUT_MAX_SIDE = 1920
OUT_MAX_FPS = 30
# libx264 (1.5 threads per core by default) and frame-threaded decoders grow
# their address space with the core count: capped at 8, 1080p and 4K sources
# fit the 2 GiB RLIMIT_AS (16 threads do not).
_THREADS = str(min(max(2, (os.cpu_count() or 2) * 3 // 2), 8))
_SCALE = (
    f"scale='min({OUT_MAX_SIDE},iw*sar)':'min({OUT_MAX_SIDE},ih)'"
    ":force_original_aspect_ratio=decrease:force_divisible_by=2,setsar=1"
)


@dataclass
class AvPlan:
    kind: str                 # video, audio or animation
    video_index: int | None
    audio_index: int | None
    audio_channels: int
    duration: float           # 0.0 when the container does not say (one-frame GIF)


@dataclass
class AvResult:
    path: str
    ext: str
    mime: str
    kind: str
    metadata: dict


def probe(config: MediaConfig, cwd: str, name: str, demuxer: str, field: str) -> dict:
    result = run_tool(
        [config.ffprobe, "-v", "error", "-hide_banner", "-protocol_whitelist", "file",
         "-f", demuxer, "-show_format", "-show_streams", "-of", "json", f"file:{name}"],
        dependency="ffprobe", cwd=cwd, timeout=config.probe_timeout,
        memory_bytes=config.tool_memory_bytes,
    )
    if result.returncode != 0:
        if out_of_memory(result):
            raise tool_failed("ffprobe", result, "out of memory")
        raise media_rejected(field, Reason.CORRUPT_FILE, "The media file cannot be read")
    try:
        data = json.loads(result.stdout)
    except ValueError:
        raise tool_failed("ffprobe", result, "unreadable output") from None
    if not isinstance(data, dict) or not isinstance(data.get("streams"), list):
        raise tool_failed("ffprobe", result, "unreadable output")
    return data


def _number(value) -> float | None:
    try:
        number = float(value)
    except (TypeError, ValueError):
        return None
    return number if number == number else None  # NaN is "unknown"


def _duration(data: dict) -> float | None:
    found = _number(data.get("format", {}).get("duration"))
    if found is None:
        streams = [_number(s.get("duration")) for s in data["streams"]]
        found = max((d for d in streams if d is not None), default=None)
    return found


def _check_video_size(stream: dict, field: str) -> None:
    width, height = int(stream.get("width") or 0), int(stream.get("height") or 0)
    check_dimensions(width, height, field, SOURCE_MAX_SIDE, SOURCE_MAX_PIXELS)


def _require_codec(stream: dict, field: str) -> None:
    if not stream.get("codec_name") or stream.get("codec_name") == "none":
        raise media_rejected(field, Reason.UNSUPPORTED_TYPE, "A media stream uses an unknown codec")


def plan(data: dict, info: Extension, field: str) -> AvPlan:
    streams = data["streams"]
    if len(streams) > MAX_STREAMS:
        raise media_rejected(
            field, Reason.STREAMS, f"The file has {len(streams)} streams; at most {MAX_STREAMS} are accepted"
        )
    # Cover art is a video stream flagged attached_pic: it is not video.
    video = [s for s in streams if s.get("codec_type") == "video"
             and not (s.get("disposition") or {}).get("attached_pic")]
    audio = [s for s in streams if s.get("codec_type") == "audio"]
    duration = _duration(data)
    if duration is not None and duration > MAX_DURATION:
        raise media_rejected(field, Reason.DURATION, f"The media is longer than {MAX_DURATION:g} seconds")
    if info.format.name == "gif":
        if len(video) != 1:
            raise media_rejected(field, Reason.STREAMS, "The GIF has no image stream")
        _check_video_size(video[0], field)
        # One-frame GIFs have no duration and are still accepted as animations.
        return AvPlan("animation", int(video[0]["index"]), None, 0, duration or 0.0)
    if video and info.audio_only:
        raise media_rejected(field, Reason.TYPE_MISMATCH, "An audio file type holds a video stream")
    if not video and not audio:
        raise media_rejected(field, Reason.STREAMS, "The file has no audio or video stream")
    if duration is None or duration <= 0:
        raise media_rejected(field, Reason.DURATION, "The media has no positive duration")
    for stream in video:
        _check_video_size(stream, field)
    for stream in video[:1] + audio[:1]:
        _require_codec(stream, field)
    return AvPlan(
        kind="video" if video else "audio",
        video_index=int(video[0]["index"]) if video else None,
        audio_index=int(audio[0]["index"]) if audio else None,
        audio_channels=int(audio[0].get("channels") or 2) if audio else 0,
        duration=duration,
    )


def _input_args(config: MediaConfig, demuxer: str) -> list[str]:
    return [config.ffmpeg, "-nostdin", "-hide_banner", "-loglevel", "error", "-threads", _THREADS,
            "-protocol_whitelist", "file", "-f", demuxer, "-i", "file:in"]


_COMMON_OUT = ["-map_metadata", "-1", "-map_chapters", "-1", "-sn", "-dn", "-t", f"{MAX_DURATION:g}"]


def _video_args(p: AvPlan) -> list[str]:
    args = ["-map", f"0:{p.video_index}"]
    if p.audio_index is not None and p.kind == "video":
        args += ["-map", f"0:{p.audio_index}", "-c:a", "aac", "-b:a", "128k"]
        if p.audio_channels > 2:
            args += ["-ac", "2"]
    else:
        args += ["-an"]
    return args + [
        "-vf", _SCALE, "-fpsmax", str(OUT_MAX_FPS), "-threads", _THREADS,
        "-c:v", "libx264", "-preset", "veryfast", "-crf", "23", "-profile:v", "high",
        "-pix_fmt", "yuv420p", *_COMMON_OUT, "-movflags", "+faststart", "-f", "mp4", "-y", "file:out.mp4",
    ]


def _audio_args(p: AvPlan) -> list[str]:
    args = ["-map", f"0:{p.audio_index}", "-vn", "-c:a", "libopus"]
    args += ["-b:a", "64k"] if p.audio_channels == 1 else ["-b:a", "128k"]
    if p.audio_channels > 2:
        args += ["-ac", "2"]
    return args + [*_COMMON_OUT, "-f", "ogg", "-y", "file:out.ogg"]


def transcode_timeout(config: MediaConfig, duration: float) -> float:
    # tool_timeout covers ten minutes of media and grows with longer media:
    # 1080p runs at about 2x realtime with two cores, 4K sources slower.
    return config.tool_timeout * (1.0 + duration / 600.0)


def _conversion_failed(result, field: str):
    """A non-zero ffmpeg exit after a good probe: blame the input only when
    ffmpeg says so, otherwise the converter is broken (503, fail closed)."""
    if out_of_memory(result):
        return tool_failed("ffmpeg", result, "out of memory")
    if b"Decoder (codec" in result.stderr or b"Error while opening decoder" in result.stderr:
        return media_rejected(field, Reason.UNSUPPORTED_TYPE, "A media stream uses an unsupported codec")
    if b"Invalid data found" in result.stderr:
        return media_rejected(field, Reason.CORRUPT_FILE, "The media file cannot be decoded")
    return tool_failed("ffmpeg", result, "conversion failed")


def transcode(config: MediaConfig, cwd: str, demuxer: str, p: AvPlan, field: str) -> AvResult:
    if p.kind == "audio":
        args, ext, mime, out_demuxer = _audio_args(p), "ogg", "audio/ogg", "ogg"
    else:
        args, ext, mime, out_demuxer = _video_args(p), "mp4", "video/mp4", "mov"
    result = run_tool(
        _input_args(config, demuxer) + args,
        dependency="ffmpeg", cwd=cwd, timeout=transcode_timeout(config, p.duration),
        memory_bytes=config.tool_memory_bytes, file_bytes=config.tool_output_bytes,
    )
    if result.returncode != 0:
        raise _conversion_failed(result, field)
    out_name = f"out.{ext}"
    if not os.path.exists(os.path.join(cwd, out_name)):
        raise tool_failed("ffmpeg", result, "no output")
    return AvResult(os.path.join(cwd, out_name), ext, mime, p.kind,
                    _output_metadata(config, cwd, out_name, out_demuxer, p, field))


def _output_metadata(config, cwd, name, demuxer, p: AvPlan, field: str) -> dict:
    data = probe(config, cwd, name, demuxer, field)
    duration = _duration(data)
    if duration is None or duration <= 0:
        raise media_rejected(field, Reason.DURATION, "The converted media has no positive duration")
    meta: dict = {"duration": round(duration, 3)}
    for stream in data["streams"]:
        if stream.get("codec_type") == "video":
            meta["width"], meta["height"] = int(stream["width"]), int(stream["height"])
            break
    else:
        if p.kind != "audio":
            raise media_rejected(field, Reason.CORRUPT_FILE, "The video has no decodable frames")
    return meta
