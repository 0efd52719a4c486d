"""One upload, from quarantine to a clean normalized file.

Order: the name and declared type (free), libmagic on the first MiB (cheap),
one format only (no archive inside, nothing after an image's end), ClamAV on
the original (so no decoder ever sees a known-bad file), the real
decoder and the conversion, ClamAV again on the output. Each upload gets a
private job directory inside ``work_dir`` where every file has a fixed name;
the directory is removed whatever happens, and only the final output is moved
next to it for the caller.
"""
from __future__ import annotations

import contextlib
import hashlib
import os
import secrets
import shutil
import tempfile
from dataclasses import dataclass
from dataclasses import field as dc_field

from botsvc import disk, owner
from botsvc.errors import ApiError, ErrorCode, Reason, media_rejected

from . import av, detect, images, names, polyglot, scanner, text
from .config import MediaConfig
from .pdf import check_pdf

_IN = "in"


@dataclass
class ProcessedFile:
    path: str
    kind: str
    mime_type: str
    file_name: str
    file_size: int
    sha256: str
    metadata: dict = dc_field(default_factory=dict)


@dataclass
class _Output:
    path: str
    kind: str
    mime: str
    ext: str
    metadata: dict


def _sha256(path: str) -> str:
    digest = hashlib.sha256()
    with open(path, "rb") as fh:
        while chunk := fh.read(1024 * 1024):
            digest.update(chunk)
    return digest.hexdigest()


def _stage_input(src_path: str, job: str) -> str:
    dest = os.path.join(job, _IN)
    try:
        os.link(src_path, dest)  # same filesystem: no copy of a 100 MiB upload
    except OSError:
        shutil.copyfile(src_path, dest)
    return dest


def _normalize(info: detect.Extension, ext: str, job: str, config: MediaConfig, field: str) -> _Output:
    fmt = info.format
    src = os.path.join(job, _IN)
    if fmt.group == "image":
        r = images.normalize_image(src, fmt.name, job, field)
        return _Output(r.path, "photo", r.mime, r.ext, r.metadata)
    if fmt.group in ("av", "animation"):
        data = av.probe(config, job, _IN, fmt.demuxer, field)
        r = av.transcode(config, job, fmt.demuxer, av.plan(data, info, field), field)
        return _Output(r.path, r.kind, r.mime, r.ext, r.metadata)
    if fmt.group == "pdf":
        meta = check_pdf(config, job, _IN, field)
        return _Output(src, "document", "application/pdf", "pdf", meta)
    r = text.normalize_text(src, ext, job, field)
    return _Output(r.path, "document", r.mime, r.ext, r.metadata)


def process_upload(
    src_path: str,
    file_name: str,
    declared_mime: str | None,
    config: MediaConfig,
    field: str = "file",
) -> ProcessedFile:
    """Decide, scan and normalize one quarantined upload.

    Raises ApiError: INVALID_PARAMETER with ``parameters.reason`` for policy
    failures, DEPENDENCY_UNAVAILABLE (503) when a tool or the scanner fails.
    The returned ``path`` lies in ``config.work_dir``; the caller moves it.
    """
    name = names.parse_name(file_name, field)
    info = detect.extension_info(name.ext, field)
    detect.check_declared(info, name.ext, declared_mime, field)
    if os.path.getsize(src_path) == 0:
        raise media_rejected(field, Reason.EMPTY_FILE, "The file is empty")
    os.makedirs(config.work_dir, mode=0o700, exist_ok=True)
    # Names carry this process (app/botsvc/owner.py): what a killed process leaves
    # here is removed at the next start.
    try:
        job = tempfile.mkdtemp(prefix=owner.file_prefix("job"), dir=config.work_dir)
    except OSError as exc:
        _raise_full_disk_instead(exc, config)
        raise
    try:
        return _process_in(job, src_path, name, info, config, field)
    except (ApiError, OSError) as exc:
        # Checked before the job dir goes: its partial output is what filled it.
        _raise_full_disk_instead(exc, config)
        raise
    finally:
        shutil.rmtree(job, ignore_errors=True)


def _raise_full_disk_instead(exc: BaseException, config: MediaConfig) -> None:
    """STORAGE_FULL for a write the disk refused: an OSError ENOSPC (staging,
    copying), or a tool's failure (a converter cannot say why it stopped)
    while the work dir's disk is full. Returns for any other failure."""
    tool_failure = isinstance(exc, ApiError) and (
        exc.code == ErrorCode.DEPENDENCY_UNAVAILABLE
        or exc.parameters.get("reason") == Reason.CORRUPT_FILE)
    if disk.is_full_oserror(exc) or (tool_failure and disk.nearly_full(config.work_dir)):
        raise disk.storage_full() from exc


def _process_in(job: str, src_path: str, name, info: detect.Extension, config: MediaConfig,
                field: str) -> ProcessedFile:
    staged = _stage_input(src_path, job)
    detect.check_content(info, name.ext, detect.sniff(staged), field)
    polyglot.check_single_format(staged, info.format, field)
    scanner.scan(config, job, _IN, field)
    out = _normalize(info, name.ext, job, config, field)
    scanner.scan(config, job, os.path.basename(out.path), field)
    final = os.path.join(config.work_dir,
                         f"{owner.file_prefix('out')}{secrets.token_hex(16)}.{out.ext}")
    try:
        if out.path == staged:
            shutil.copyfile(staged, final)  # never hand out a link to the quarantined original
        else:
            os.replace(out.path, final)
        return ProcessedFile(
            path=final,
            kind=out.kind,
            mime_type=out.mime,
            file_name=names.display_name(name, out.ext),
            file_size=os.path.getsize(final),
            sha256=_sha256(final),
            metadata=out.metadata,
        )
    except BaseException:
        with contextlib.suppress(FileNotFoundError):
            os.unlink(final)   # a copy cut short by a full disk leaves nothing
        raise
