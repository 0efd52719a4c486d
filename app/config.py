"""Settings, read once from the environment (DECISIONS.md §7).

Every setting has a default that runs a local installation with no settings
at all. ``Settings.from_env`` is the only place that reads BOTSVC_* variables.
"""
from __future__ import annotations

import contextlib
import errno
import logging
import os
import secrets
import ssl
from dataclasses import dataclass, field

log = logging.getLogger(__name__)

UPLOAD_HARD_CEILING = 100 * 1024 * 1024
JSON_BODY_LIMIT = 1024 * 1024


def _int(env: dict, name: str, default: int) -> int:
    raw = env.get(name)
    if raw is None or raw == "":
        return default
    try:
        value = int(raw)
    except ValueError:
        raise SystemExit(f"{name} must be an integer, got {raw!r}") from None
    if value < 0:
        raise SystemExit(f"{name} must not be negative")
    return value


def _ca_bundle(env: dict, name: str) -> str | None:
    """A readable PEM file holding at least one certificate, checked at start
    so a typo fails loudly instead of every delivery failing later."""
    raw = env.get(name)
    if not raw:
        return None
    path = os.path.abspath(raw)
    try:
        ssl.create_default_context(cafile=path)
    except (OSError, ssl.SSLError) as e:
        raise SystemExit(f"{name}: cannot load CA certificates from {path}: {e}") from None
    return path


def _choice(env: dict, name: str, allowed: tuple[str, ...], default: str) -> str:
    raw = (env.get(name) or default).strip().lower()
    if raw not in allowed:
        raise SystemExit(f"{name} must be one of {', '.join(allowed)}, got {raw!r}")
    return raw


def _flag(env: dict, name: str) -> bool:
    return env.get(name, "0").strip().lower() in ("1", "true", "yes", "on")


@dataclass(frozen=True)
class Settings:
    bind: str = "127.0.0.1:8080"
    data_dir: str = "./data"
    base_url: str = "http://127.0.0.1:8080"
    admin_token: str | None = None
    secret_key: bytes = field(default=b"", repr=False)
    rate_api_per_sec: int = 60
    rate_sends_per_sec: int = 20
    rate_uploads_per_min: int = 10
    rate_broadcasts_per_min: int = 10
    upload_max_bytes: int = 50 * 1024 * 1024
    storage_quota_bytes: int = 1024 * 1024 * 1024
    webhook_allow_private: bool = False
    # PEM file of CA certificates trusted for webhook receivers in addition to
    # certifi's bundle (a CI receiver with its own CA); None: certifi alone.
    webhook_ca_bundle: str | None = None
    # Free bytes under the data dir below which /readyz reports the disk and
    # uploads are refused early (DECISIONS §8).
    min_free_bytes: int = 268435456
    # Bearer token of GET /metrics besides the admin token; None: admin only.
    metrics_token: str | None = field(default=None, repr=False)
    # "text" or "json" (one JSON object per log line).
    log_format: str = "text"
    # The testing tools of DECISIONS §9 (reset, advanceClock, injectFault, ...).
    test_tools: bool = False
    # Days of chat history kept (messages older are removed by a job); 0 keeps it forever.
    history_retention_days: int = 0
    # Off in unit tests that drive the worker by hand; on in the server.
    run_scheduler: bool = True

    @property
    def db_path(self) -> str:
        return os.path.join(self.data_dir, "botsvc.sqlite3")

    @classmethod
    def from_env(cls, env: dict | None = None, **overrides) -> Settings:
        env = dict(os.environ if env is None else env)
        bind = env.get("BOTSVC_BIND") or cls.bind
        data_dir = os.path.abspath(env.get("BOTSVC_DATA_DIR") or cls.data_dir)
        upload_max = _int(env, "BOTSVC_UPLOAD_MAX_BYTES", cls.upload_max_bytes)
        if upload_max > UPLOAD_HARD_CEILING:
            raise SystemExit("BOTSVC_UPLOAD_MAX_BYTES is capped at 104857600 (100 MiB)")
        values = dict(
            bind=bind,
            data_dir=data_dir,
            base_url=(env.get("BOTSVC_BASE_URL") or f"http://{bind}").rstrip("/"),
            admin_token=env.get("BOTSVC_ADMIN_TOKEN") or None,
            rate_api_per_sec=_int(env, "BOTSVC_RATE_API_PER_SEC", cls.rate_api_per_sec),
            rate_sends_per_sec=_int(env, "BOTSVC_RATE_SENDS_PER_SEC", cls.rate_sends_per_sec),
            rate_uploads_per_min=_int(env, "BOTSVC_RATE_UPLOADS_PER_MIN", cls.rate_uploads_per_min),
            rate_broadcasts_per_min=_int(
                env, "BOTSVC_RATE_BROADCASTS_PER_MIN", cls.rate_broadcasts_per_min
            ),
            upload_max_bytes=upload_max,
            storage_quota_bytes=_int(env, "BOTSVC_STORAGE_QUOTA_BYTES", cls.storage_quota_bytes),
            webhook_allow_private=_flag(env, "BOTSVC_WEBHOOK_ALLOW_PRIVATE"),
            webhook_ca_bundle=_ca_bundle(env, "BOTSVC_WEBHOOK_CA_BUNDLE"),
            min_free_bytes=_int(env, "BOTSVC_MIN_FREE_BYTES", cls.min_free_bytes),
            metrics_token=env.get("BOTSVC_METRICS_TOKEN") or None,
            log_format=_choice(env, "BOTSVC_LOG_FORMAT", ("text", "json"), cls.log_format),
            test_tools=_flag(env, "BOTSVC_TEST_TOOLS"),
            history_retention_days=_int(env, "BOTSVC_HISTORY_RETENTION_DAYS",
                                        cls.history_retention_days),
        )
        values.update(overrides)
        if not values.get("secret_key"):
            configured = env.get("BOTSVC_SECRET_KEY")
            values["secret_key"] = (
                configured.encode() if configured else load_or_create_secret(values["data_dir"])
            )
        return cls(**values)


def load_or_create_secret(data_dir: str) -> bytes:
    """The signing key, generated once and kept in the data dir (mode 0600).

    Written whole to a temporary file, then linked into place: the first of
    several starting workers wins, the others read what it wrote, and a disk
    too full to hold it leaves no empty key file behind (one clear line
    instead; with a key already there, a start writes nothing).
    """
    os.makedirs(data_dir, mode=0o700, exist_ok=True)
    path = os.path.join(data_dir, "secret_key")
    if not os.path.exists(path):
        _write_new_secret(data_dir, path)
    with open(path, "rb") as fh:
        key = fh.read().strip()
    if not key:
        raise SystemExit(f"the signing key file {path} is empty: remove it to generate a new"
                         " one (signed download URLs given out so far stop working)")
    return key


def _write_new_secret(data_dir: str, path: str) -> None:
    tmp = os.path.join(data_dir, f".secret_key.{secrets.token_hex(8)}.tmp")
    try:
        fd = os.open(tmp, os.O_WRONLY | os.O_CREAT | os.O_EXCL, 0o600)
        with os.fdopen(fd, "wb") as fh:
            fh.write(secrets.token_hex(32).encode())
            fh.flush()
            os.fsync(fh.fileno())
        try:
            os.link(tmp, path)
        except FileExistsError:
            pass   # another worker's key won; it is read back by the caller
    except OSError as exc:
        if exc.errno in (errno.ENOSPC, errno.EDQUOT):
            raise SystemExit(f"cannot create the signing key in {data_dir}: the disk is full") \
                from None
        raise
    finally:
        with contextlib.suppress(OSError):
            os.unlink(tmp)
