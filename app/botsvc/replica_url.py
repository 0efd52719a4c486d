"""BOTSVC_REPLICA's value: where Litestream keeps the database's replica
(app/botsvc/replication.py runs it). An absolute path is a file replica; a
URL is passed to Litestream (``s3://bucket/path``, with ``?endpoint=`` for
S3-compatible storage; ``sftp://user@host/path?host-key=...&key-path=...``:
those two go into Litestream's configuration, app/botsvc/replication.py).
Checked for what can never work, not for reachability, and fails closed: an
SFTP replica names the server's host key (Litestream accepts any otherwise)."""
from __future__ import annotations

import os
from urllib.parse import parse_qs, urlsplit

SCHEMES = ("file", "sftp", "s3")


def replica_url(raw: str, data_dir: str) -> str:
    """The replica URL for ``raw``; ValueError (its problem) if it cannot be one."""
    url = "file://" + os.path.abspath(raw) if raw.startswith("/") else raw
    scheme, _, rest = url.partition("://")
    if scheme not in SCHEMES or not rest.strip("/"):
        raise ValueError("must be an absolute path or a file://, sftp:// or s3:// URL")
    if scheme == "sftp" and not parse_qs(urlsplit(url).query).get("host-key"):
        raise ValueError("names no host key: add ?host-key= and the server's public key as"
                         " known_hosts holds it, URL-encoded (Litestream accepts any otherwise)")
    if scheme == "file":
        path, data_dir = os.path.abspath(rest), os.path.abspath(data_dir)
        if not rest.startswith("/"):
            raise ValueError("must name an absolute path (file:///srv/replica)")
        if os.path.commonpath([path, data_dir]) in (path, data_dir):
            raise ValueError("must be outside the data dir (a replica there is lost with it)")
    return url
