"""Upload pipeline benchmark (a part of scripts/bench, not a test).

For a 12-megapixel JPEG, a 30-second 1080p video and a 3-minute song, in the
same run and in alternating rounds:

  raw:    the work of the raw tools, run directly: the very clamscan, ffprobe
          and ffmpeg command lines the pipeline runs (recorded from a run of
          the pipeline, replayed without our runner), and for the photo the
          same Pillow decode, orientation and re-encode;
  target: one uploadFile through the real server (scripts/server: gunicorn,
          2 threaded workers), from the first byte sent to the answer.

It prints both medians and our overhead in percent of the raw time (aim:
under 10%): HTTP transfer, streaming to quarantine and hashing, libmagic,
prlimit, job directories, moving into storage and the database.
"""
from __future__ import annotations

import os
import shutil
import subprocess
import tempfile
import time
from pathlib import Path

import requests
from PIL import Image, ImageOps

from botsvc.media import MediaConfig, process_upload, runner

FILES = {
    # name: (ffmpeg arguments making it, declared MIME type)
    # Noise makes it the size of a camera's 12 MP JPEG (about 7 MB).
    "photo.jpg": (["-f", "lavfi", "-i", "testsrc2=size=4000x3000,noise=alls=30:allf=t",
                   "-frames:v", "1", "-q:v", "3"], "image/jpeg"),
    "video.mp4": (["-f", "lavfi", "-i", "testsrc2=size=1920x1080:rate=30", "-f", "lavfi",
                   "-i", "sine=f=440:r=48000", "-t", "30", "-c:v", "libx264", "-preset",
                   "veryfast", "-crf", "23", "-pix_fmt", "yuv420p", "-c:a", "aac"],
                  "video/mp4"),
    "song.mp3": (["-f", "lavfi", "-i", "aevalsrc=0.3*sin(440*2*PI*t)+0.2*sin(660*2*PI*t)"
                  ":s=44100:c=stereo", "-t", "180", "-b:a", "192k"], "audio/mpeg"),
}


def make_files(directory: Path) -> dict[str, Path]:
    made = {}
    for name, (args, _) in FILES.items():
        path = directory / name
        subprocess.run(["ffmpeg", "-hide_banner", "-loglevel", "error", "-nostdin", "-y", *args,
                        str(path)], check=True)
        made[name] = path
    return made


def record_commands(config: MediaConfig, path: Path, name: str, declared: str) -> list[list[str]]:
    """The tool command lines the pipeline runs for this file, in order
    (before the prlimit wrapper), recorded from one run of the pipeline."""
    seen: list[list[str]] = []
    original = runner.limited

    def spy(argv, **limits):
        seen.append(list(argv))
        return original(argv, **limits)

    runner.limited = spy
    try:
        quarantined = Path(config.work_dir) / "recording-input"
        shutil.copyfile(path, quarantined)
        result = process_upload(str(quarantined), name, declared, config)
        os.unlink(result.path)
        os.unlink(quarantined)
    finally:
        runner.limited = original
    return seen


def raw_pillow(job: Path) -> None:
    """What images.normalize_image does to a JPEG, with Pillow directly."""
    with Image.open(job / "in", formats=("JPEG",)) as im:
        im.load()
        out = ImageOps.exif_transpose(im)
        if out.mode not in ("RGB", "L"):
            out = out.convert("RGB")
        out.save(job / "out.jpg", format="JPEG", quality=90)


def run_raw(path: Path, commands: list[list[str]], photo: bool, scratch: Path) -> float:
    job = Path(tempfile.mkdtemp(dir=scratch))
    try:
        shutil.copyfile(path, job / "in")
        started = time.perf_counter()
        for index, argv in enumerate(commands):
            if photo and index == 1:
                raw_pillow(job)  # between the scan of the original and of the output
            subprocess.run(argv, cwd=job, stdin=subprocess.DEVNULL, stdout=subprocess.DEVNULL,
                           stderr=subprocess.DEVNULL, check=False)
        return time.perf_counter() - started
    finally:
        shutil.rmtree(job)


def run_upload(base_url: str, token: str, path: Path, declared: str) -> float:
    with open(path, "rb") as fh:
        started = time.perf_counter()
        answer = requests.post(f"{base_url}/v2/uploadFile", timeout=900,
                               headers={"Authorization": f"Bearer {token}"},
                               files={"file": (path.name, fh, declared)})
        elapsed = time.perf_counter() - started
    if answer.status_code != 200:
        raise SystemExit(f"uploadFile failed: {answer.status_code} {answer.text}")
    return elapsed


def run(tmp: Path, server, rounds: int, alternate, median) -> None:
    files = make_files(tmp)
    token = server.operator("createBot", username="upload_bench_bot")["token"]
    test_db = server.data_dir / "clamav-test-db"
    work = tmp / "work"
    work.mkdir()
    config = MediaConfig(clamd_socket=None, work_dir=str(work),
                         clamav_db=str(test_db) if test_db.is_dir() else None)
    print(f"upload: {rounds} alternating rounds per file; raw = the same clamscan/ffprobe/"
          f"ffmpeg command lines and Pillow work run directly;\n        target = uploadFile "
          f"on the real server (signatures: {config.clamav_db or 'system database'})")
    for name, path in files.items():
        declared = FILES[name][1]
        photo = name.endswith(".jpg")
        commands = record_commands(config, path, name, declared)
        raws, targets = alternate(
            rounds, lambda p=path, c=commands, i=photo: run_raw(p, c, i, work),
            lambda p=path, d=declared: run_upload(server.base_url, token, p, d))
        raw, target = median(raws), median(targets)
        size = path.stat().st_size / 1e6
        tools = ", ".join(os.path.basename(argv[0]) for argv in commands)
        print(f"  {name:<10} {size:6.1f} MB   raw {raw:7.2f} s   uploadFile {target:7.2f} s   "
              f"overhead {100 * (target - raw) / raw:+5.1f}%   ({tools}"
              f"{', Pillow' if photo else ''})")
