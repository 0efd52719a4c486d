"""A crash mid-upload leaves no key stuck and nothing on disk (issue 13 point
4): a claim records its process; a dead process's claim is released at once
(when a duplicate arrives, and at the start of any process), a live one's
holds, and every 409 in_progress says when to retry; quarantine and work files
of dead processes are swept at start."""
from __future__ import annotations

import hashlib
import os
import time

import pytest

from botsvc import idempotency, owner
from botsvc.db import connect
from botsvc.devkit.owners import dead_owner
from botsvc.domain import files
from tests.support.contract import assert_failure
from tests.support.media_files import bot_on, multipart

KEY = "upload-order-7"
NAME = "p.png"


@pytest.fixture
def photo(samples) -> bytes:
    return samples["photo.png"]


def _claim(app, bot, data: bytes, holder: str | None, lease_in: float = 900.0) -> None:
    """The row a claimed upload leaves while it runs (or after its process died)."""
    source = {"params": {}, "files": {"file": [hashlib.sha256(data).hexdigest(), NAME,
                                               "application/octet-stream"]}}
    db = connect(app.config["SETTINGS"].db_path)
    db.execute("INSERT INTO idempotency_keys (bot_id, key, method, fingerprint, state,"
               " lease_expires_at, owner, created_at) VALUES (?, ?, 'uploadFile', ?, 'running',"
               " ?, ?, ?)", (bot.id, KEY, idempotency.fingerprint("uploadFile", source),
                             time.time() + lease_in, holder, int(time.time())))
    db.close()


def _upload(bot, data: bytes):
    return multipart(bot, "uploadFile", {"file": (data, NAME)}, headers={"Idempotency-Key": KEY})


def _claims(app) -> list:
    db = connect(app.config["SETTINGS"].db_path)
    try:
        return db.execute("SELECT key, state FROM idempotency_keys").fetchall()
    finally:
        db.close()


def test_a_dead_process_claim_is_released_when_a_duplicate_arrives(app, bot, photo):
    _claim(app, bot, photo, dead_owner())
    response = _upload(bot, photo)
    assert response.status_code == 200, response.get_json()  # ran now, no 5 s wait, no 409
    assert "Idempotent-Replayed" not in response.headers
    again = _upload(bot, photo)
    assert again.headers["Idempotent-Replayed"] == "true"
    assert again.get_json() == response.get_json()


def test_a_live_claim_answers_in_progress_with_retry_after(app, bot, photo, monkeypatch):
    monkeypatch.setattr(idempotency, "WAIT_FOR_RUNNING_SECONDS", 0.2)
    _claim(app, bot, photo, owner.current())
    body = assert_failure(_upload(bot, photo), 409, "IDEMPOTENCY_CONFLICT", in_progress=True)
    retry_after = body["parameters"]["retry_after"]
    assert type(retry_after) is int and retry_after >= 1
    assert _upload(bot, photo).headers["Retry-After"] == str(retry_after)


def test_a_live_claim_outlasts_its_lease(app, bot, photo, monkeypatch):
    # A 30-minute video converts for longer than any fixed lease: while its
    # process lives, nobody runs the same key a second time.
    monkeypatch.setattr(idempotency, "WAIT_FOR_RUNNING_SECONDS", 0.2)
    _claim(app, bot, photo, owner.current(), lease_in=-60)
    assert_failure(_upload(bot, photo), 409, "IDEMPOTENCY_CONFLICT", in_progress=True)


@pytest.mark.parametrize("holder", [None, "another-pid-namespace"])
def test_a_claim_whose_process_cannot_be_seen_waits_out_its_lease(app, bot, photo, monkeypatch,
                                                                  holder):
    if holder:
        boot, _, pid, start = owner.current().split("-")
        holder = f"{boot}-1-{pid}-{start}"
    monkeypatch.setattr(idempotency, "WAIT_FOR_RUNNING_SECONDS", 0.2)
    _claim(app, bot, photo, holder)
    assert_failure(_upload(bot, photo), 409, "IDEMPOTENCY_CONFLICT", in_progress=True)
    db = connect(app.config["SETTINGS"].db_path)
    db.execute("UPDATE idempotency_keys SET lease_expires_at = 0")
    db.close()
    assert _upload(bot, photo).status_code == 200


def test_an_upload_records_its_process_while_it_runs(app, bot, photo, monkeypatch):
    seen = []
    real = files.process_and_store

    def spy(*args, **kwargs):
        seen.extend(_claims_with_owner(app))
        return real(*args, **kwargs)

    monkeypatch.setattr(files, "process_and_store", spy)
    assert _upload(bot, photo).status_code == 200
    assert seen == [(KEY, "running", owner.current())]


def _claims_with_owner(app) -> list:
    db = connect(app.config["SETTINGS"].db_path)
    try:
        return [tuple(row) for row in db.execute("SELECT key, state, owner FROM idempotency_keys")]
    finally:
        db.close()


def _leftovers(app, holder: str) -> list[str]:
    """A quarantine copy, a job directory and a finished output of ``holder``."""
    quarantine, work = app.config["QUARANTINE_DIR"], app.config["MEDIA"].work_dir
    os.makedirs(work, exist_ok=True)
    made = [os.path.join(quarantine, f"upload-{holder}-abc123"),
            os.path.join(work, f"out-{holder}-{'a' * 32}.mp4")]
    for path in made:
        with open(path, "wb") as fh:
            fh.write(b"half done")
    job = os.path.join(work, f"job-{holder}-xyz789")
    os.makedirs(os.path.join(job, "inner"))
    with open(os.path.join(job, "out.ogg"), "wb") as fh:
        fh.write(b"finished by a tool that outlived its server")
    return [*made, job]


def test_the_start_of_a_process_releases_dead_claims_and_sweeps_their_files(make_app, photo):
    app = make_app()
    bot = bot_on(app)
    dead = dead_owner()
    _claim(app, bot, photo, dead)
    theirs = _leftovers(app, dead)
    live = _leftovers(app, owner.current())  # a process still at work: untouched
    untagged = os.path.join(app.config["QUARANTINE_DIR"], "upload-from-an-older-version")
    open(untagged, "wb").close()  # no owner: the six-hour rule
    make_app()  # another process starts on the same data dir
    assert _claims(app) == []
    assert [path for path in theirs if os.path.exists(path)] == []
    assert all(os.path.exists(path) for path in [*live, untagged])
    # And the key runs again at once.
    assert _upload(bot, photo).status_code == 200


def test_the_periodic_sweep_removes_dead_processes_files_at_once(app):
    theirs = _leftovers(app, dead_owner())
    live = _leftovers(app, owner.current())
    settings = app.config["SETTINGS"]
    conn = connect(settings.db_path)
    try:
        files.sweep_leftovers(conn, settings.data_dir, app.config["MEDIA"].work_dir,
                              app.config["QUARANTINE_DIR"])
    finally:
        conn.close()
    assert [path for path in theirs if os.path.exists(path)] == []
    assert all(os.path.exists(path) for path in live)


def test_uploads_name_their_temporary_files_after_their_process(app, bot, photo, monkeypatch):
    seen = []
    real = files.process_upload

    def spy(src_path, *args, **kwargs):
        seen.append(os.path.basename(src_path))
        return real(src_path, *args, **kwargs)

    monkeypatch.setattr(files, "process_upload", spy)
    assert _upload(bot, photo).status_code == 200
    assert owner.owner_of(seen[0]) == owner.current()
