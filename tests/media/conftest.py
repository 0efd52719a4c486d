"""Shared fixtures of the media tests: real tools, real files made at test
time, and (for the HTTP tests of files and media methods) the app wired to
the offline signature database."""
from __future__ import annotations

import os
import secrets
import shutil
import subprocess
from pathlib import Path

import pytest

from botsvc.errors import ApiError, ErrorCode
from botsvc.media import MediaConfig, process_upload
from tests.support.clamd import running_clamd, scanning_socket
from tests.support.media_files import Samples, Storage, run_ffmpeg


@pytest.fixture
def work_dir(tmp_path) -> Path:
    return tmp_path / "work"


@pytest.fixture
def config(request, suite_clamd, offline_signature_db, work_dir) -> MediaConfig:
    """Scanning through the suite's clamd (tests/support/clamd.py), or with
    clamscan for a test marked ``clamscan``."""
    return MediaConfig(clamd_socket=scanning_socket(request, suite_clamd),
                       clamav_db=offline_signature_db, work_dir=str(work_dir))


@pytest.fixture(scope="session")
def media_dir(tmp_path_factory) -> Path:
    return tmp_path_factory.mktemp("media")


@pytest.fixture(scope="session")
def ffmpeg_make(media_dir):
    """``make(name, *ffmpeg_args)``: the file ``name`` written by ffmpeg once
    per session (lavfi test sources keep it small and fast)."""
    made: dict[str, Path] = {}

    def make(name: str, *args: str) -> Path:
        if name not in made:
            made[name] = run_ffmpeg(media_dir / name, *args)
        return made[name]

    return make


def _quarantine(tmp_path: Path, data: bytes | Path) -> str:
    qdir = tmp_path / "quarantine"
    qdir.mkdir(exist_ok=True)
    path = qdir / secrets.token_hex(8)
    if isinstance(data, Path):
        shutil.copyfile(data, path)
    else:
        path.write_bytes(data)
    return str(path)


@pytest.fixture
def upload(config, tmp_path):
    """Run the pipeline on bytes or a file, as the HTTP layer will."""

    def run(data: bytes | Path, name: str, declared: str | None = None, cfg: MediaConfig | None = None):
        return process_upload(_quarantine(tmp_path, data), name, declared, cfg or config)

    return run


def _expect_error(tmp_path, work_dir, call) -> ApiError:
    with pytest.raises(ApiError) as info:
        call()
    err = info.value
    # No private path in what the client sees, and no job directory left.
    assert str(tmp_path) not in err.description
    assert str(tmp_path) not in repr(err.parameters)
    if work_dir.exists():
        assert [n for n in os.listdir(work_dir) if n.startswith("job-")] == []
    return err


@pytest.fixture
def reject(upload, tmp_path, work_dir):
    """Assert a 400 INVALID_PARAMETER with exactly this reason."""

    def run(data, name, reason, declared=None, cfg=None) -> ApiError:
        err = _expect_error(tmp_path, work_dir, lambda: upload(data, name, declared, cfg))
        assert err.code is ErrorCode.INVALID_PARAMETER, err.body()
        assert err.http_status == 400
        assert err.parameters == {"field": "file", "reason": reason}, err.body()
        return err

    return run


@pytest.fixture
def unavailable(upload, tmp_path, work_dir):
    """Assert a 503 DEPENDENCY_UNAVAILABLE naming this dependency."""

    def run(data, name, dependency, declared=None, cfg=None) -> ApiError:
        err = _expect_error(tmp_path, work_dir, lambda: upload(data, name, declared, cfg))
        assert err.code is ErrorCode.DEPENDENCY_UNAVAILABLE, err.body()
        assert err.http_status == 503
        assert err.parameters == {"dependency": dependency}, err.body()
        return err

    return run


def ffprobe_json(path) -> dict:
    import json

    out = subprocess.run(
        ["ffprobe", "-v", "error", "-show_format", "-show_streams", "-of", "json", str(path)],
        check=True, capture_output=True, timeout=60,
    )
    return json.loads(out.stdout)


@pytest.fixture
def probe_file():
    return ffprobe_json


@pytest.fixture(scope="session")
def clamd(tmp_path_factory, offline_signature_db):
    """A real clamd on a private unix socket with the test database and a
    1 MiB StreamMaxLength, for the zINSTREAM path's limit."""
    with running_clamd(tmp_path_factory.mktemp("clamd"), offline_signature_db, "1M") as sock:
        yield sock


# -- the app, for the HTTP tests ---------------------------------------------------

@pytest.fixture
def scanner_settings(offline_scanner) -> dict:
    return offline_scanner


@pytest.fixture(scope="session")
def samples(tmp_path_factory) -> Samples:
    return Samples(tmp_path_factory.mktemp("samples"))


@pytest.fixture
def storage(app) -> Storage:
    return Storage(app)
