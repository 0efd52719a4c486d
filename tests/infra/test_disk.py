"""app/botsvc/disk.py and the parts that meet a full disk in one process: the error
mapping, the transaction helper on a real full tmpfs, the rate counted in
the process, the reserve, and what a start writes (docs/storage.md "A full disk")."""
from __future__ import annotations

import errno
import os
import sqlite3
import subprocess
from pathlib import Path

import pytest

from botsvc import db, disk, limits, migrations
from botsvc.errors import ApiError, ErrorCode, RateLimited
from botsvc.media.signatures import DB_FILE, build_test_signature_db
from botsvc.secret_key import load_or_create_secret
from tests.support.small_disk import fill, small_tmpfs


@pytest.fixture
def tmpfs(tmp_path) -> Path:
    with small_tmpfs(tmp_path, "4m") as mount:
        yield mount


# -- the mapping ---------------------------------------------------------------

@pytest.mark.parametrize("number", [errno.ENOSPC, errno.EDQUOT])
def test_enospc_and_edquot_are_a_full_disk(number):
    assert disk.is_disk_full(OSError(number, os.strerror(number)))


def test_a_full_disk_is_found_behind_a_wrapping_error():
    try:
        try:
            raise OSError(errno.ENOSPC, "No space left on device")
        except OSError as inner:
            raise RuntimeError("the copy failed") from inner
    except RuntimeError as outer:
        assert disk.is_disk_full(outer)


def test_other_errors_are_not_a_full_disk(tmp_path):
    assert not disk.is_disk_full(OSError(errno.EACCES, "Permission denied"))
    assert not disk.is_disk_full(ValueError("no"))
    assert not disk.is_disk_full(sqlite3.OperationalError("database is locked"), str(tmp_path))
    assert not disk.is_disk_full(ApiError(ErrorCode.INTERNAL_ERROR, "x"))
    assert disk.is_disk_full(disk.storage_full())


def test_sqlite_full_is_a_full_disk_by_its_code_or_its_message(tmp_path):
    by_message = sqlite3.OperationalError("database or disk is full")
    assert disk.is_disk_full(by_message)
    by_code = sqlite3.OperationalError("anything")
    by_code.sqlite_errorcode = 13            # SQLITE_FULL
    assert disk.is_disk_full(by_code, str(tmp_path))


def test_a_disk_io_error_is_a_full_disk_only_when_the_disk_is_full(tmp_path, tmpfs):
    error = sqlite3.OperationalError("disk I/O error")
    error.sqlite_errorcode = 4874            # SQLITE_IOERR_SHMSIZE
    assert not disk.is_disk_full(error, str(tmp_path))   # a disk with room: a real I/O error
    fill(tmpfs)
    assert disk.is_disk_full(error, str(tmpfs))


def test_free_bytes_reads_the_nearest_existing_directory(tmpfs):
    st = os.statvfs(tmpfs)
    assert disk.free_bytes(str(tmpfs / "not" / "yet")) == st.f_bavail * st.f_frsize
    fill(tmpfs)
    assert disk.free_bytes(str(tmpfs)) == 0 and disk.nearly_full(str(tmpfs))


def test_an_upload_is_refused_under_the_minimum_free_space(tmp_path):
    disk.check_room_for_upload(str(tmp_path), 0)            # 0 turns the check off
    disk.check_room_for_upload(str(tmp_path), 1)
    with pytest.raises(ApiError) as refused:
        disk.check_room_for_upload(str(tmp_path), 1 << 62)
    assert refused.value.code == ErrorCode.STORAGE_FULL
    assert refused.value.http_status == 503 and refused.value.parameters == {}


# -- the transaction helper on a full disk -------------------------------------

def test_a_commit_the_disk_refuses_is_storage_full_rolled_back_whole(tmpfs):
    path = str(tmpfs / "t.sqlite3")
    conn = db.connect(path)
    conn.execute("PRAGMA journal_mode = WAL")
    conn.execute("CREATE TABLE t (v BLOB)")
    db.checkpoint(conn)
    filler = fill(tmpfs)
    undone, announced = [], []
    with pytest.raises(ApiError) as refused:
        with db.transaction(conn):
            conn.execute("INSERT INTO t VALUES (zeroblob(100000))")
            conn.on_rollback(lambda: undone.append(True))
            conn.after_commit(lambda: announced.append(True))
    assert refused.value.code == ErrorCode.STORAGE_FULL
    assert isinstance(refused.value.__cause__, sqlite3.Error)
    assert not conn.in_transaction and undone == [True] and announced == []
    assert conn.execute("SELECT COUNT(*) FROM t").fetchone()[0] == 0
    # Space back: the same connection writes, and an old hook never fires again.
    filler.unlink()
    with db.transaction(conn):
        conn.execute("INSERT INTO t VALUES (x'00')")
    assert conn.execute("SELECT COUNT(*) FROM t").fetchone()[0] == 1 and undone == [True]
    conn.close()


# -- the rate while the disk is full -------------------------------------------

def _rates_db(tmp_path) -> sqlite3.Connection:
    conn = sqlite3.connect(tmp_path / "r.sqlite3", isolation_level=None)
    conn.execute("CREATE TABLE rate_limits (bot_id INTEGER, bucket TEXT, tat REAL,"
                 " PRIMARY KEY (bot_id, bucket))")
    return conn


def test_an_unrecorded_rate_still_holds_in_the_process(tmp_path):
    conn = _rates_db(tmp_path)
    limit = limits.Limit("api", 3, 1.0)
    now = 1_800_000_000.0
    for _ in range(3):
        limits.consume_unrecorded(conn, 7, [limit], now=now)
    with pytest.raises(RateLimited):
        limits.consume_unrecorded(conn, 7, [limit], now=now)
    assert conn.execute("SELECT COUNT(*) FROM rate_limits").fetchone()[0] == 0   # nothing written
    limits.consume_unrecorded(conn, 8, [limit], now=now)    # per bot
    limits.consume_unrecorded(conn, 7, [limit], now=now + 0.34)   # refills with time


def test_an_unrecorded_rate_starts_from_the_stored_one(tmp_path):
    conn = _rates_db(tmp_path)
    limit = limits.Limit("api", 3, 1.0)
    now = 1_800_000_100.0
    for _ in range(3):
        limits.consume(conn, 9, [limit], now=now)          # the burst used up, recorded
    with pytest.raises(RateLimited):
        limits.consume_unrecorded(conn, 9, [limit], now=now)


# -- starting on a full disk -----------------------------------------------------

def test_the_reserve_is_kept_and_given_back_on_a_full_disk(tmpfs):
    data = tmpfs / "data"
    data.mkdir()
    assert disk.keep_reserve(str(data), 0)
    assert (data / disk.RESERVE_NAME).stat().st_blocks * 512 >= disk.RESERVE_BYTES
    assert disk.make_room_to_start(str(data)) == (None, False)      # room: nothing to do
    fill(tmpfs)
    free, released = disk.make_room_to_start(str(data))
    assert released and free >= disk.RESERVE_BYTES and not (data / disk.RESERVE_NAME).exists()
    assert disk.make_room_to_start(str(data))[1] is False           # said once
    assert not disk.keep_reserve(str(data), 0)                      # no room for it now
    assert [p.name for p in data.iterdir()] == []                   # and no temp file


def test_the_test_signature_db_is_not_rewritten_and_leaves_no_temp(tmpfs):
    dest = tmpfs / "clamav-test-db"
    build_test_signature_db(str(dest))
    written = (dest / DB_FILE).stat().st_mtime_ns
    fill(tmpfs)
    build_test_signature_db(str(dest))                              # already there: no write
    assert (dest / DB_FILE).stat().st_mtime_ns == written
    (dest / DB_FILE).unlink()
    fill(tmpfs, "more")
    with pytest.raises(OSError):
        build_test_signature_db(str(dest))
    assert list(dest.iterdir()) == []


def test_no_empty_signing_key_on_a_full_disk(tmpfs):
    data = tmpfs / "data"
    data.mkdir()
    fill(tmpfs)
    with pytest.raises(SystemExit) as stopped:
        load_or_create_secret(str(data))
    assert "the disk is full" in str(stopped.value) and "\n" not in str(stopped.value)
    assert list(data.iterdir()) == []
    (tmpfs / "filler").unlink()
    key = load_or_create_secret(str(data))
    assert len(key) == 64 and load_or_create_secret(str(data)) == key


# -- the upload pipeline ---------------------------------------------------------

def _leave_free(mount: Path, free: int) -> None:
    filler = fill(mount)
    os.truncate(filler, filler.stat().st_size - free)


@pytest.fixture
def video(tmp_path) -> Path:
    """3 s of a test pattern at the lowest quality (28 KB): its conversion
    writes about 100 KB."""
    path = tmp_path / "in.mp4"
    subprocess.run(["ffmpeg", "-hide_banner", "-loglevel", "error", "-nostdin", "-y", "-f",
                    "lavfi", "-i", "testsrc2=size=640x480:rate=25", "-t", "3", "-c:v", "libx264",
                    "-crf", "51", "-pix_fmt", "yuv420p", str(path)], check=True, timeout=60)
    return path


@pytest.mark.parametrize("room", ["none_for_the_input", "none_for_the_output"])
def test_the_pipeline_out_of_space_is_storage_full_and_leaves_nothing(tmpfs, tmp_path, video,
                                                                       room):
    from botsvc.media import MediaConfig, process_upload
    work = tmpfs / "media-work"
    work.mkdir()
    config = MediaConfig(clamd_socket=None, clamav_db=build_test_signature_db(
        str(tmp_path / "sigdb")), work_dir=str(work))
    size = video.stat().st_size
    _leave_free(tmpfs, size // 2 if room == "none_for_the_input" else size + 70 * 1024)
    with pytest.raises(ApiError) as refused:
        process_upload(str(video), "in.mp4", "video/mp4", config)
    # (ffmpeg itself exits 0 after "No space left on device" on the trailer:
    # the probe of its cut output is what fails, and the full disk is blamed.)
    assert refused.value.code == ErrorCode.STORAGE_FULL, refused.value.__cause__
    assert list(work.iterdir()) == []


def test_a_rolled_back_savepoint_runs_its_own_hooks_only(tmp_path):
    conn = db.connect(str(tmp_path / "s.sqlite3"))
    conn.execute("CREATE TABLE t (v INTEGER)")
    ran = []
    with db.transaction(conn):
        conn.on_rollback(lambda: ran.append("outer"))
        with pytest.raises(ValueError), db.transaction(conn):
            conn.execute("INSERT INTO t VALUES (1)")
            conn.on_rollback(lambda: ran.append("inner"))
            raise ValueError("undo the savepoint")
        assert ran == ["inner"]
    assert ran == ["inner"]                 # committed: the outer hook is dropped
    assert conn.execute("SELECT COUNT(*) FROM t").fetchone()[0] == 0
    conn.close()


# -- a claim the disk would not let go of ----------------------------------------

def test_a_claim_whose_release_the_disk_refused_is_freed_later(tmp_path):
    from botsvc import idempotency as idem
    path = str(tmp_path / "k.sqlite3")
    migrations.migrate(path)
    conn = db.connect(path)
    with db.transaction(conn):
        conn.execute("INSERT INTO bots (id, username, display_name, token_hash, created_at)"
                     " VALUES (1, 'claims_bot', 'claims', x'00', 0)")
        idem.claim(conn, 1, "k-1", "uploadFile", "fp")
        idem.claim(conn, 1, "k-2", "uploadFile", "fp")
    idem.release_later(1, "k-1")
    idem.release_later(1, "k-2")
    # A duplicate in this process does not wait for a claim that is over.
    with db.transaction(conn):
        assert idem.lookup(conn, 1, "k-1", "uploadFile", "fp") is None
    # The job releases the rest once the disk takes it.
    assert idem.release_unreleased(conn) == 2 and idem.release_unreleased(conn) == 0
    assert conn.execute("SELECT COUNT(*) FROM idempotency_keys").fetchone()[0] == 0
    # A new claim of the same key is a live one again.
    with db.transaction(conn):
        idem.claim(conn, 1, "k-1", "uploadFile", "fp")
    with pytest.raises(idem.StillRunning), db.transaction(conn):
        idem.lookup(conn, 1, "k-1", "uploadFile", "fp")
    conn.close()


def test_migrate_on_a_full_disk_without_a_reserve_stops_with_one_line(tmpfs):
    from click.testing import CliRunner

    from botsvc.cli import main
    env = {"BOTSVC_DATA_DIR": str(tmpfs / "data")}
    first = CliRunner().invoke(main, ["migrate"], env=env)
    assert first.exit_code == 0, first.output
    fill(tmpfs)             # no reserve: only a server process makes one
    again = CliRunner().invoke(main, ["migrate"], env=env)
    assert again.exit_code == 1
    assert str(again.exception) == (f"botsvc: cannot open or migrate {tmpfs}/data/botsvc.sqlite3:"
                                    " the disk is full; free some space and start again")
