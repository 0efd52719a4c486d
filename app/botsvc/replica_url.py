"""BOTSVC_REPLICA's value: where Litestream keeps the database's replica
(app/botsvc/replication.py runs it). An absolute path is a file replica; a
URL is passed to Litestream as it is (``sftp://user@host/path``,
``s3://bucket/path``, with ``?endpoint=`` for S3-compatible storage).
Checked for what can never work, not for reachability."""
from __future__ import annotations

import os

SCHEMES = ("file", "sftp", "s3")


def replica_url(raw: str, data_dir: str) -> str:
    """The replica URL for ``raw``; ValueError (its problem) if it cannot be one."""
    url = "file://" + os.path.abspath(raw) if raw.startswith("/") else raw
    scheme, _, rest = url.partition("://")
    if scheme not in SCHEMES or not rest.strip("/"):
        raise ValueError("must be an absolute path or a file://, sftp:// or s3:// URL")
    if scheme == "file":
        path, data_dir = os.path.abspath(rest), os.path.abspath(data_dir)
        if not rest.startswith("/"):
            raise ValueError("must name an absolute path (file:///srv/replica)")
        if os.path.commonpath([path, data_dir]) in (path, data_dir):
            raise ValueError("must be outside the data dir (a replica there is lost with it)")
    return url
