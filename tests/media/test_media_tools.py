"""The runner's guarantees, and failing closed when a tool is missing or slow."""
from __future__ import annotations

import dataclasses
import io
import os
import sys
import time

import pytest
from PIL import Image

from botsvc.errors import ApiError, ErrorCode
from botsvc.media import check_dependencies
from botsvc.media.runner import run_tool

MIB = 1024 * 1024


def run(argv, cwd, **kw):
    kw.setdefault("timeout", 30)
    kw.setdefault("memory_bytes", 2048 * MIB)
    return run_tool(argv, dependency="tool", cwd=str(cwd), **kw)


def expect_503(call, dependency="tool") -> ApiError:
    with pytest.raises(ApiError) as info:
        call()
    assert info.value.code is ErrorCode.DEPENDENCY_UNAVAILABLE
    assert info.value.parameters == {"dependency": dependency}
    return info.value


def gone(pid: int) -> bool:
    try:
        with open(f"/proc/{pid}/stat") as fh:
            return fh.read().split(") ", 1)[1].startswith("Z")  # a zombie is dead
    except FileNotFoundError:
        return True


def test_timeout_kills_the_whole_process_group(tmp_path):
    start = time.monotonic()
    err = expect_503(lambda: run(["sh", "-c", "sleep 30 & echo $! > child; wait"], tmp_path, timeout=0.5))
    assert time.monotonic() - start < 5
    assert "0.5 s" in err.description
    assert gone(int((tmp_path / "child").read_text()))


def test_memory_limit_applies(tmp_path):
    grab = [sys.executable, "-c", "b = bytearray(400 * 1024 * 1024); print(len(b))"]
    assert run(grab, tmp_path).returncode == 0
    limited = run(grab, tmp_path, memory_bytes=300 * MIB)
    assert limited.returncode != 0 and b"MemoryError" in limited.stderr


def test_output_file_size_limit(tmp_path):
    argv = ["dd", "if=/dev/zero", "of=big", "bs=1M", "count=4"]
    expect_503(lambda: run(argv, tmp_path, file_bytes=1 * MIB))
    assert os.path.getsize(tmp_path / "big") <= MIB


def limits_seen_by(tmp_path, **kw) -> dict[str, str]:
    lines = run(["cat", "/proc/self/limits"], tmp_path, **kw).stdout.decode().splitlines()
    return {line[:26].strip(): line[26:].split()[0] for line in lines[1:]}


def test_limits_are_applied_by_prlimit_not_preexec_fn(tmp_path, monkeypatch):
    import subprocess

    seen = []
    real_popen = subprocess.Popen

    def spy(argv, **kw):
        seen.append((argv, kw))
        return real_popen(argv, **kw)

    monkeypatch.setattr("botsvc.media.runner.subprocess.Popen", spy)
    limits = limits_seen_by(tmp_path, memory_bytes=700 * MIB, file_bytes=3 * MIB, timeout=7)
    assert limits["Max address space"] == str(700 * MIB)
    assert limits["Max file size"] == str(3 * MIB)
    assert limits["Max core file size"] == "0"
    assert int(limits["Max cpu time"]) >= 7
    argv, kw = seen[0]
    assert argv[0].endswith("/prlimit") and argv[argv.index("--") + 1].endswith("/cat")
    assert kw.get("preexec_fn") is None and "shell" not in kw


def test_missing_prlimit_fails_closed(tmp_path, monkeypatch):
    monkeypatch.setattr("botsvc.media.runner.PRLIMIT_SEARCH_PATH", str(tmp_path / "nowhere"))
    err = expect_503(lambda: run(["true"], tmp_path), dependency="prlimit")
    assert "prlimit" in err.description


def test_minimal_environment_and_no_shell(tmp_path, monkeypatch):
    monkeypatch.setenv("LD_PRELOAD", "/nonexistent.so")
    monkeypatch.setenv("http_proxy", "http://proxy.invalid:3128")
    env = run(["env"], tmp_path).stdout.decode().splitlines()
    assert sorted(line.split("=", 1)[0] for line in env) == ["HOME", "LC_ALL", "PATH", "TMPDIR"]
    echoed = run(["echo", "$(id)", ";", "`id`", "|", "x"], tmp_path).stdout
    assert echoed == b"$(id) ; `id` | x\n"


def test_missing_crashing_and_unloadable_tools(tmp_path):
    err = expect_503(lambda: run(["/nonexistent/tool"], tmp_path))
    assert err.description == "tool is not installed"
    expect_503(lambda: run(["sh", "-c", "kill -SEGV $$"], tmp_path))
    expect_503(lambda: run(["sh", "-c", "exit 127"], tmp_path))


def test_check_dependencies_passes_with_the_real_tools(config):
    check_dependencies(config)


@pytest.mark.clamscan
def test_check_dependencies_names_what_is_missing(config, tmp_path, monkeypatch):
    expect_503(lambda: check_dependencies(dataclasses.replace(config, ffmpeg="/nonexistent/ffmpeg")), "ffmpeg")
    expect_503(lambda: check_dependencies(dataclasses.replace(config, ffprobe="/nonexistent/fp")), "ffprobe")
    expect_503(lambda: check_dependencies(dataclasses.replace(config, clamscan="/nonexistent/cs")), "clamav")
    only_clamscan = tmp_path / "bin"
    only_clamscan.mkdir()
    os.symlink("/usr/bin/clamscan", only_clamscan / "clamscan")
    monkeypatch.setenv("PATH", str(only_clamscan))
    expect_503(lambda: check_dependencies(config), "ffmpeg")   # the first tool it starts


def png() -> bytes:
    buf = io.BytesIO()
    Image.new("RGB", (8, 8)).save(buf, "PNG")
    return buf.getvalue()


@pytest.fixture
def clip(ffmpeg_make):
    return ffmpeg_make("tools.mp4", "-f", "lavfi", "-i", "testsrc=size=160x120:rate=25", "-t", "1",
                       "-c:v", "libx264", "-preset", "ultrafast")


def test_missing_ffmpeg_or_ffprobe_fails_closed(config, unavailable, upload, clip, tmp_path, monkeypatch):
    unavailable(clip, "v.mp4", "ffmpeg", cfg=dataclasses.replace(config, ffmpeg="/nonexistent/ffmpeg"))
    only_clamscan = tmp_path / "bin"
    only_clamscan.mkdir()
    os.symlink("/usr/bin/clamscan", only_clamscan / "clamscan")
    monkeypatch.setenv("PATH", str(only_clamscan))
    unavailable(clip, "v.mp4", "ffprobe")
    # Photos need no external tool besides the scanner.
    assert upload(png(), "p.png").kind == "photo"


def test_tool_timeouts_fail_closed(config, unavailable, clip):
    unavailable(clip, "v.mp4", "ffprobe", cfg=dataclasses.replace(config, probe_timeout=0.001))
    unavailable(clip, "v.mp4", "ffmpeg", cfg=dataclasses.replace(config, tool_timeout=0.05))


def test_too_little_memory_fails_closed_not_as_bad_input(config, unavailable, clip):
    unavailable(clip, "v.mp4", "ffprobe", cfg=dataclasses.replace(config, tool_memory_bytes=64 * MIB))


def test_pdf_inspector_failure_fails_closed(config, unavailable):
    pdf = b"%PDF-1.4\n1 0 obj << /Type /Catalog >> endobj\ntrailer << /Root 1 0 R >>\n%%EOF\n"
    unavailable(pdf, "d.pdf", "pikepdf", cfg=dataclasses.replace(config, probe_timeout=0.001))


def test_config_from_settings(tmp_path):
    from botsvc.config import Settings
    from botsvc.media import MediaConfig

    def config(**env):
        return MediaConfig.from_settings(
            Settings.from_env({"BOTSVC_DATA_DIR": str(tmp_path), **env}, secret=False))

    plain = config()
    assert (plain.clamd_socket, plain.clamav_db) == (None, None)
    assert plain.work_dir == str(tmp_path / "media-work")
    assert (plain.tool_timeout, plain.probe_timeout, plain.tool_memory_bytes) == (600.0, 30.0, 2 * 1024 * MIB)
    tuned = config(BOTSVC_CLAMD_SOCKET="/run/clamav/clamd.ctl", BOTSVC_CLAMAV_DB="/srv/clamdb",
                   BOTSVC_MEDIA_TOOL_TIMEOUT="900")
    assert (tuned.clamd_socket, tuned.clamav_db, tuned.tool_timeout) == (
        "/run/clamav/clamd.ctl", "/srv/clamdb", 900.0)


def test_output_lands_in_work_dir_and_job_dirs_are_removed(upload, config):
    result = upload(png(), "p.png")
    assert os.path.dirname(result.path) == config.work_dir
    assert os.listdir(config.work_dir) == [os.path.basename(result.path)]
