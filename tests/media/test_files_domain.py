"""The files domain below HTTP: the quota holds under concurrency, leftovers
are swept, stored bytes go when their row cannot be written."""
from __future__ import annotations

import os
import threading
import time

import pytest

from botsvc.db import connect, transaction
from botsvc.domain import files
from botsvc.errors import ApiError
from botsvc.jobs import run_job
from botsvc.media import ProcessedFile
from tests.support.media_files import bot_on, multipart


def stored_upload(app, size: int, name: str = "x.txt") -> files.StoredUpload:
    """Bytes already processed (as the pipeline leaves them in the work dir)."""
    work = app.config["MEDIA"].work_dir
    os.makedirs(work, exist_ok=True)
    path = os.path.join(work, f"out-{os.urandom(4).hex()}.txt")
    with open(path, "wb") as fh:
        fh.write(b"a" * size)
    processed = ProcessedFile(path, "document", "text/plain", name, size, "0" * 64, {})
    return files.move_into_storage(app.config["SETTINGS"].data_dir, processed)


def test_two_concurrent_uploads_cannot_both_slip_under_the_quota(make_app):
    app = make_app(storage_quota_bytes=1500)
    bot = bot_on(app)
    db_path = app.config["SETTINGS"].db_path
    uploads = [stored_upload(app, 1000), stored_upload(app, 1000)]
    barrier = threading.Barrier(2)
    outcomes: list = [None, None]

    def record(index: int) -> None:
        conn = connect(db_path)
        try:
            barrier.wait()
            with files.discarded_on_error(uploads[index]), transaction(conn):
                files.record_file(conn, bot.id, uploads[index], 1500, "file")
                time.sleep(0.2)  # hold the transaction while the other one waits
            outcomes[index] = "stored"
        except ApiError as error:
            outcomes[index] = error.parameters["reason"]
        finally:
            conn.close()

    threads = [threading.Thread(target=record, args=(i,)) for i in range(2)]
    for thread in threads:
        thread.start()
    for thread in threads:
        thread.join()
    assert sorted(outcomes) == ["quota_exceeded", "stored"]
    conn = connect(db_path)
    assert files.used_bytes(conn, bot.id) == 1000
    conn.close()
    assert [os.path.exists(u.path) for u in uploads].count(True) == 1


def test_record_file_needs_a_transaction(app):
    conn = connect(app.config["SETTINGS"].db_path)
    try:
        with pytest.raises(RuntimeError):
            files.record_file(conn, 1, stored_upload(app, 10), 100, "file")
    finally:
        conn.close()


def test_storage_names_are_checked_before_they_become_paths(tmp_path):
    assert files.storage_path(str(tmp_path), "a" * 32).endswith("/files/" + "a" * 32)
    for bad in ("../secret_key", "a" * 31, "A" * 32, "a" * 32 + "/x", ""):
        with pytest.raises(ValueError):
            files.storage_path(str(tmp_path), bad)


def test_the_sweep_removes_only_old_leftovers(app, bot, samples):
    settings = app.config["SETTINGS"]
    kept = multipart(bot, "uploadFile", {"file": (samples["photo.png"], "p.png")})
    assert kept.status_code == 200
    orphan = stored_upload(app, 5)
    quarantine, work = app.config["QUARANTINE_DIR"], app.config["MEDIA"].work_dir
    stale_upload = os.path.join(quarantine, "upload-stale")
    open(stale_upload, "wb").close()
    stale_job = os.path.join(work, "job-stale")
    os.makedirs(os.path.join(stale_job, "inner"))
    # A rename sets ctime, which cannot be set back: the sweep is shown the
    # future instead of ageing the files.
    now = time.time()
    conn = connect(settings.db_path)
    try:
        # Half an hour on, everything is still within its grace.
        assert files.sweep_leftovers(conn, settings.data_dir, work, quarantine,
                                     at=now + 1800) == 0
        assert os.path.exists(orphan.path)
        # Two hours on: the unreferenced bytes go; quarantine and work stay.
        assert files.sweep_leftovers(conn, settings.data_dir, work, quarantine,
                                     at=now + 2 * 3600) == 1
        assert not os.path.exists(orphan.path) and os.path.exists(stale_upload)
        # Seven hours on: the quarantine file and the job directory go too.
        assert files.sweep_leftovers(conn, settings.data_dir, work, quarantine,
                                     at=now + 7 * 3600) == 2
    finally:
        conn.close()
    assert not os.path.exists(stale_upload) and not os.path.exists(stale_job)
    # The file with a row is kept, and still downloads.
    file_id = kept.get_json()["result"]["file_id"]
    got = bot.ok("getFile", file_id=file_id)
    assert bot.client.get(got["download_url"].split("8080", 1)[1]).status_code == 200


def test_the_sweep_job_runs_once_per_interval(app, monkeypatch):
    calls = []
    monkeypatch.setattr(files, "sweep_leftovers", lambda *a, **k: calls.append(a) or 0)
    run_job(app, "sweep_upload_leftovers")
    run_job(app, "sweep_upload_leftovers")
    assert len(calls) == 1


def test_bytes_go_when_the_row_is_refused(app, bot, chat, samples, storage):
    # A direct upload to a deleted reply target passes prepare's check only if
    # the message goes in between; simulate a handler failure after the move.
    from botsvc.domain import media_messages

    stored = stored_upload(app, 10)
    conn = connect(app.config["SETTINGS"].db_path)
    try:
        with pytest.raises(ApiError):
            with files.discarded_on_error(stored), transaction(conn):
                media_messages.send_media(conn, bot.id, chat.chat_id, "photo", "photo", stored,
                                          quota=10**9)
    finally:
        conn.close()
    assert not os.path.exists(stored.path)
    storage.assert_nothing_stored()
