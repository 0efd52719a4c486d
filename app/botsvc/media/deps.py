"""The media tools' probe and the start-up check, one module for both.

``probe_tools`` is the light probe (/readyz asks it at most once a minute):
each program starts (``-version``; clamscan would load its whole signature
database for a scan) and the scanner has signatures or clamd answers.
``check_dependencies`` (``botsvc check-media``, ``botsvc serve``) runs that
probe, then each tool the way uploads will (same runner, same limits), so a
missing encoder or an unloadable signature database is found at start, not
at the first upload. Uploads still fail closed on their own if a tool breaks
later.
"""
from __future__ import annotations

import os
import shutil
import sys
import tempfile

from botsvc import owner
from botsvc.errors import ApiError, ErrorCode, dependency_unavailable

from . import detect, scanner
from .config import MediaConfig
from .runner import run_tool, tool_failed
from .signatures import SYSTEM_DATABASE, has_signatures

OK = "ok"
NO_SIGNATURES = "clamav_no_signatures"

_ENCODERS = ("libx264", "aac", "libopus")
_DEMUXERS = ("mov", "matroska", "mp3", "ogg", "wav", "flac", "gif")


def _listed(output: bytes, names: tuple[str, ...]) -> list[str]:
    words = {line.split()[1] for line in output.decode("utf-8", "replace").splitlines()
             if len(line.split()) > 1}
    # ffmpeg lists demuxers as "mov,mp4,m4a,..." in one word.
    words |= {part for word in words for part in word.split(",")}
    return [name for name in names if name not in words]


def _start_each_tool(config: MediaConfig, cwd: str) -> None:
    """Each program starts; clamd, when configured, answers PING."""
    programs = [([config.ffmpeg, "-hide_banner", "-version"], "ffmpeg"),
                ([config.ffprobe, "-hide_banner", "-version"], "ffprobe")]
    if not config.clamd_socket:
        programs.append(([config.clamscan, "--version"], "clamav"))
    for argv, dependency in programs:
        result = run_tool(argv, dependency=dependency, cwd=cwd, timeout=config.probe_timeout,
                          memory_bytes=config.tool_memory_bytes)
        if result.returncode != 0:
            raise tool_failed(dependency, result, "it does not run")
    if config.clamd_socket:
        scanner.ping_clamd(config)


def _scanner_has_signatures(config: MediaConfig) -> bool:
    return bool(config.clamd_socket) or has_signatures(config.clamav_db or SYSTEM_DATABASE)


def probe_tools(config: MediaConfig) -> str:
    """``ok``, or what is wrong as one snake_case word (``ffmpeg_unavailable``,
    ``clamav_no_signatures``, ...): never a path or a version."""
    os.makedirs(config.work_dir, mode=0o700, exist_ok=True)
    try:
        _start_each_tool(config, config.work_dir)
    except ApiError as error:
        return f"{error.parameters.get('dependency', 'media')}_unavailable"
    return OK if _scanner_has_signatures(config) else NO_SIGNATURES


def _check_ffmpeg(config: MediaConfig, cwd: str) -> None:
    for option, wanted in (("-encoders", _ENCODERS), ("-demuxers", _DEMUXERS)):
        result = run_tool([config.ffmpeg, "-hide_banner", option], dependency="ffmpeg", cwd=cwd,
                          timeout=config.probe_timeout, memory_bytes=config.tool_memory_bytes)
        missing = _listed(result.stdout, wanted) if result.returncode == 0 else list(wanted)
        if missing:
            raise dependency_unavailable("ffmpeg", f"ffmpeg lacks {', '.join(missing)}")


def _check_python_parsers(config: MediaConfig, cwd: str) -> None:
    result = run_tool([sys.executable, "-I", "-c", "import pikepdf"], dependency="pikepdf",
                      cwd=cwd, timeout=config.probe_timeout, memory_bytes=config.tool_memory_bytes)
    if result.returncode != 0:
        raise tool_failed("pikepdf", result, "it cannot be imported")
    sample = os.path.join(cwd, "sample.txt")
    with open(sample, "w") as fh:
        fh.write("botsvc dependency check\n")
    detect.sniff(sample)  # raises 503 libmagic if unusable


def _check_scanner(config: MediaConfig, cwd: str) -> None:
    if config.clamd_socket:
        return   # answered PING in _start_each_tool
    with open(os.path.join(cwd, "clean.txt"), "w") as fh:
        fh.write("botsvc scanner check\n")
    # A real scan proves the program starts and its database loads.
    try:
        scanner.scan(config, cwd, "clean.txt", "file")
    except ApiError as exc:
        if exc.code is ErrorCode.DEPENDENCY_UNAVAILABLE:
            raise
        raise dependency_unavailable("clamav", "ClamAV rejects a clean test file") from None


def check_dependencies(config: MediaConfig) -> None:
    """Raise DEPENDENCY_UNAVAILABLE naming the first tool that is missing or broken."""
    os.makedirs(config.work_dir, mode=0o700, exist_ok=True)
    cwd = tempfile.mkdtemp(prefix=owner.file_prefix("check"), dir=config.work_dir)
    try:
        _start_each_tool(config, cwd)
        if not _scanner_has_signatures(config):
            raise dependency_unavailable("clamav", "ClamAV has no signature database (run "
                                         "freshclam, or set BOTSVC_CLAMAV_DB)")
        _check_ffmpeg(config, cwd)
        _check_python_parsers(config, cwd)
        _check_scanner(config, cwd)
    finally:
        shutil.rmtree(cwd, ignore_errors=True)
