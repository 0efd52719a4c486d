"""The media pipeline's settings: a view of ``botsvc.config.Settings`` (where
the environment is read and checked) plus the limits that are not settings."""
from __future__ import annotations

import os
from dataclasses import dataclass

GIB = 1024 * 1024 * 1024


@dataclass(frozen=True)
class MediaConfig:
    clamd_socket: str | None
    clamav_db: str | None
    work_dir: str
    # Time limit of one ffmpeg conversion of up to ten minutes of media,
    # scaled up for longer media (see av.transcode_timeout): a 30-minute
    # 1080p video needs over ten minutes of libx264 "veryfast" on two cores.
    tool_timeout: float = 600.0
    # ffprobe and the PDF inspector only parse headers and objects.
    probe_timeout: float = 30.0
    # clamscan reloads its whole database on every run: seconds with the
    # official one, so the scan limit is generous.
    scan_timeout: float = 300.0
    # RLIMIT_AS of ffmpeg, ffprobe and the PDF inspector. libx264 at 1080p
    # with 8 threads needs about 1 GiB of address space.
    tool_memory_bytes: int = 2 * GIB
    # clamscan's memory is its signature database (over 1 GiB resident with
    # the official one), not the upload, so it gets its own ceiling.
    scan_memory_bytes: int = 4 * GIB
    # RLIMIT_FSIZE of converters: bounds any output they write.
    tool_output_bytes: int = 512 * 1024 * 1024
    # Program names, looked up on the server's PATH at each run.
    ffmpeg: str = "ffmpeg"
    ffprobe: str = "ffprobe"
    clamscan: str = "clamscan"

    @classmethod
    def from_settings(cls, settings) -> MediaConfig:
        return cls(
            clamd_socket=settings.clamd_socket,
            clamav_db=settings.clamav_db,
            work_dir=os.path.join(settings.data_dir, "media-work"),
            tool_timeout=settings.media_tool_timeout,
            scan_timeout=settings.media_scan_timeout,
            tool_memory_bytes=settings.media_tool_memory_bytes,
        )
