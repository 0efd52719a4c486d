"""Settings: every BOTSVC_* variable the service reads, read and checked here
once, and documented in the README's Settings table (a test
checks that it names every variable read here).

Every setting has a default that runs a local installation with no settings
at all. A bad value stops the start (scripts/server, gunicorn, the ``botsvc``
command) with one line naming the setting and no traceback: ``SettingError``
is a ``SystemExit``. ``Settings.from_env`` is the only place that reads
BOTSVC_* variables; the media pipeline's ``MediaConfig`` and gunicorn's
configuration are views of it. The signing key it loads lives in the data
dir (app/botsvc/secret_key.py).
"""
from __future__ import annotations

import logging
import os
import re
import ssl
from dataclasses import dataclass, field
from urllib.parse import urlsplit

from botsvc.replica_url import replica_url
from botsvc.secret_key import load_or_create_secret

log = logging.getLogger(__name__)

DATABASE_FILE = "botsvc.sqlite3"   # in the data dir (and in a backup)
UPLOAD_HARD_CEILING = 100 * 1024 * 1024
JSON_BODY_LIMIT = 1024 * 1024
GIB = 1024 * 1024 * 1024
MAX_WORKERS = 64
MAX_THREADS = 256
MAX_TOOL_SECONDS = 86400.0
MIN_TOOL_MEMORY_BYTES = 64 * 1024 * 1024
_FLAG_WORDS = {"1": True, "true": True, "yes": True, "on": True,
               "0": False, "false": False, "no": False, "off": False}
_HOST_PORT = re.compile(r"^(?P<host>\[[0-9A-Fa-f:.]+\]|[A-Za-z0-9.-]*):(?P<port>[0-9]{1,5})$")


class SettingError(SystemExit):
    """A setting with a bad value. As a SystemExit it ends the process with
    its one-line message on stderr and status 1, never a traceback."""

    def __init__(self, name: str, problem: str):
        super().__init__(f"botsvc: {name} {problem}")
        self.setting = name


def _shown(raw: str) -> str:
    return repr(raw if len(raw) <= 40 else raw[:40] + "...")


def _raw(env: dict, name: str) -> str | None:
    value = env.get(name)
    return None if value is None or value.strip() == "" else value.strip()


def _int(env: dict, name: str, default: int, minimum: int = 0,
         maximum: int | None = None) -> int:
    raw = _raw(env, name)
    if raw is None:
        return default
    try:
        value = int(raw)
    except ValueError:
        raise SettingError(name, f"must be an integer, got {_shown(raw)}") from None
    if value < minimum:
        raise SettingError(name, "must not be negative" if minimum == 0
                           else f"must be at least {minimum}, got {value}")
    if maximum is not None and value > maximum:
        raise SettingError(name, f"must be at most {maximum}, got {value}")
    return value


def _seconds(env: dict, name: str, default: float) -> float:
    raw = _raw(env, name)
    if raw is None:
        return default
    try:
        value = float(raw)
    except ValueError:
        raise SettingError(name, f"must be a number of seconds, got {_shown(raw)}") from None
    if not 0 < value <= MAX_TOOL_SECONDS:
        raise SettingError(name, f"must be above 0 and at most {MAX_TOOL_SECONDS:.0f} seconds,"
                                 f" got {raw}")
    return value


def _flag(env: dict, name: str, default: bool = False) -> bool:
    raw = _raw(env, name)
    if raw is None:
        return default
    if raw.lower() not in _FLAG_WORDS:
        raise SettingError(name, f"must be 0 or 1, got {_shown(raw)}")
    return _FLAG_WORDS[raw.lower()]


def _choice(env: dict, name: str, allowed: tuple[str, ...], default: str) -> str:
    raw = (_raw(env, name) or default).lower()
    if raw not in allowed:
        raise SettingError(name, f"must be one of {', '.join(allowed)}, got {_shown(raw)}")
    return raw


def _replica(env: dict, name: str) -> str | None:
    raw = _raw(env, name)
    try:
        return None if raw is None else replica_url(raw, _raw(env, "BOTSVC_DATA_DIR") or "./data")
    except ValueError as problem:
        raise SettingError(name, f"{problem}, got {_shown(raw)}") from None


def _bind(env: dict, default: str) -> str:
    """HOST:PORT (an IPv6 host in brackets) or unix:PATH, as gunicorn takes it."""
    raw = _raw(env, "BOTSVC_BIND") or default
    if raw.startswith("unix:") and len(raw) > len("unix:"):
        return raw
    match = _HOST_PORT.match(raw)
    if not match:
        raise SettingError("BOTSVC_BIND", f"must be HOST:PORT or unix:PATH, got {_shown(raw)}")
    if not 1 <= int(match["port"]) <= 65535:
        raise SettingError("BOTSVC_BIND", f"port must be 1 to 65535, got {match['port']}")
    return raw


def _base_url(env: dict, bind: str) -> str:
    raw = _raw(env, "BOTSVC_BASE_URL")
    return f"http://{bind}" if raw is None else http_url("BOTSVC_BASE_URL", raw)


def http_url(name: str, raw: str) -> str:
    """An http or https base address, without a trailing slash (BOTSVC_BASE_URL,
    BOTSVC_URL, the botsvc command's --url)."""
    parts = urlsplit(raw)
    if parts.scheme not in ("http", "https") or not parts.netloc or parts.query \
            or parts.fragment:
        raise SettingError(name, f"must be an http or https URL without query, got {_shown(raw)}")
    return raw.rstrip("/")


def _ca_bundle(env: dict, name: str) -> str | None:
    """A readable PEM file holding at least one certificate, checked at start
    so a typo fails loudly instead of every delivery failing later."""
    raw = _raw(env, name)
    if raw is None:
        return None
    path = os.path.abspath(raw)
    try:
        ssl.create_default_context(cafile=path)
    except (OSError, ssl.SSLError) as e:
        raise SettingError(name, f"cannot load CA certificates from {path}: {e}") from None
    return path


@dataclass(frozen=True)
class Settings:
    bind: str = "127.0.0.1:8080"
    data_dir: str = "./data"
    base_url: str = "http://127.0.0.1:8080"
    admin_token: str | None = None
    # A running server's address (BOTSVC_URL): the botsvc command's operator
    # commands act on it through /manage/v1 instead of on the data dir, and the
    # pytest plugin uses it instead of starting a server. None: neither.
    url: str | None = None
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
    # uploads are refused early.
    min_free_bytes: int = 268435456
    # Bearer token of GET /metrics besides the admin token; None: admin only.
    metrics_token: str | None = field(default=None, repr=False)
    # "text" or "json" (one JSON object per log line).
    log_format: str = "text"
    # Counting for GET /metrics (BOTSVC_METRICS=0: nothing counted, /metrics is
    # 404; the baseline of scripts/bench api).
    metrics_enabled: bool = True
    # The bots' call log (getBotCalls): every /v2 call of a known bot with its
    # parameters and result for 24 hours. BOTSVC_CALL_LOG=0: nothing recorded.
    call_log: bool = True
    # The testing tools that would wreck a real installation (reset, advanceClock,
    # injectFault, clearFaults).
    test_tools: bool = False
    # Days of chat history kept (messages older are removed by a job); 0 keeps it forever.
    history_retention_days: int = 0
    # gunicorn (app/botsvc/gunicorn_conf.py): worker processes, threads in each.
    workers: int = 2
    threads: int = 4
    # One log line per request, written by the app (app/botsvc/logs.py).
    access_log: bool = True
    # The media pipeline (app/botsvc/media/config.py: MediaConfig is a view of these).
    clamd_socket: str | None = None      # scan with clamd over this unix socket
    clamav_db: str | None = None         # clamscan's --database; None: the system's
    media_tool_timeout: float = 600.0    # one ffmpeg run over 10 minutes of media
    media_scan_timeout: float = 300.0
    media_tool_memory_bytes: int = 2 * GIB
    # When `botsvc serve` checks the media tools: "start" (before serving, a
    # real installation) or "lazy" (not then: a test server that most runs
    # never upload to; an upload with a broken tool still fails closed, 503
    # DEPENDENCY_UNAVAILABLE, and /readyz still reports the tools).
    media_check: str = "start"
    # Off in unit tests that drive the worker by hand; on in the server.
    run_scheduler: bool = True
    # Bodies parked while they arrive (app/botsvc/connection/spool.py), per
    # worker: bytes in all, and bytes and requests of one token.
    spool_max_bytes: int = 512 * 1024 * 1024
    spool_token_max_bytes: int = 128 * 1024 * 1024
    spool_token_max_requests: int = 16
    # Litestream's replica of the database (app/botsvc/replication.py); None: none.
    replica: str | None = None

    @property
    def db_path(self) -> str:
        return os.path.join(self.data_dir, DATABASE_FILE)

    @classmethod
    def from_env(cls, env: dict | None = None, *, secret: bool = True,
                 **overrides) -> Settings:
        """Read and check every setting; ``overrides`` (field names) win.
        ``secret=False`` leaves the signing key unread (gunicorn's master
        reads its settings without touching the data dir)."""
        env = dict(os.environ if env is None else env)
        bind = _bind(env, cls.bind)
        values = dict(
            bind=bind,
            data_dir=os.path.abspath(_raw(env, "BOTSVC_DATA_DIR") or cls.data_dir),
            base_url=_base_url(env, bind),
            admin_token=env.get("BOTSVC_ADMIN_TOKEN") or None,
            url=http_url("BOTSVC_URL", raw_url) if (raw_url := _raw(env, "BOTSVC_URL")) else None,
            rate_api_per_sec=_int(env, "BOTSVC_RATE_API_PER_SEC", cls.rate_api_per_sec),
            rate_sends_per_sec=_int(env, "BOTSVC_RATE_SENDS_PER_SEC", cls.rate_sends_per_sec),
            rate_uploads_per_min=_int(env, "BOTSVC_RATE_UPLOADS_PER_MIN", cls.rate_uploads_per_min),
            rate_broadcasts_per_min=_int(
                env, "BOTSVC_RATE_BROADCASTS_PER_MIN", cls.rate_broadcasts_per_min
            ),
            upload_max_bytes=_int(env, "BOTSVC_UPLOAD_MAX_BYTES", cls.upload_max_bytes,
                                  maximum=UPLOAD_HARD_CEILING),
            storage_quota_bytes=_int(env, "BOTSVC_STORAGE_QUOTA_BYTES", cls.storage_quota_bytes),
            webhook_allow_private=_flag(env, "BOTSVC_WEBHOOK_ALLOW_PRIVATE"),
            webhook_ca_bundle=_ca_bundle(env, "BOTSVC_WEBHOOK_CA_BUNDLE"),
            min_free_bytes=_int(env, "BOTSVC_MIN_FREE_BYTES", cls.min_free_bytes),
            metrics_token=env.get("BOTSVC_METRICS_TOKEN") or None,
            log_format=_choice(env, "BOTSVC_LOG_FORMAT", ("text", "json"), cls.log_format),
            metrics_enabled=_flag(env, "BOTSVC_METRICS", cls.metrics_enabled),
            call_log=_flag(env, "BOTSVC_CALL_LOG", cls.call_log),
            test_tools=_flag(env, "BOTSVC_TEST_TOOLS"),
            history_retention_days=_int(env, "BOTSVC_HISTORY_RETENTION_DAYS",
                                        cls.history_retention_days, maximum=36500),
            workers=_int(env, "BOTSVC_WORKERS", cls.workers, minimum=1, maximum=MAX_WORKERS),
            threads=_int(env, "BOTSVC_THREADS", cls.threads, minimum=1, maximum=MAX_THREADS),
            access_log=_flag(env, "BOTSVC_ACCESS_LOG", cls.access_log),
            clamd_socket=_raw(env, "BOTSVC_CLAMD_SOCKET"),
            clamav_db=_raw(env, "BOTSVC_CLAMAV_DB"),
            media_tool_timeout=_seconds(env, "BOTSVC_MEDIA_TOOL_TIMEOUT", cls.media_tool_timeout),
            media_scan_timeout=_seconds(env, "BOTSVC_MEDIA_SCAN_TIMEOUT", cls.media_scan_timeout),
            media_tool_memory_bytes=_int(env, "BOTSVC_MEDIA_TOOL_MEMORY_BYTES",
                                         cls.media_tool_memory_bytes,
                                         minimum=MIN_TOOL_MEMORY_BYTES),
            media_check=_choice(env, "BOTSVC_MEDIA_CHECK", ("start", "lazy"), cls.media_check),
            spool_max_bytes=_int(env, "BOTSVC_SPOOL_MAX_BYTES", cls.spool_max_bytes),
            spool_token_max_bytes=_int(env, "BOTSVC_SPOOL_TOKEN_MAX_BYTES",
                                       cls.spool_token_max_bytes),
            spool_token_max_requests=_int(env, "BOTSVC_SPOOL_TOKEN_MAX_REQUESTS",
                                          cls.spool_token_max_requests, minimum=1),
            replica=_replica(env, "BOTSVC_REPLICA"),
        )
        values.update(overrides)
        if secret and not values.get("secret_key"):
            configured = env.get("BOTSVC_SECRET_KEY")
            values["secret_key"] = (
                configured.encode() if configured else load_or_create_secret(values["data_dir"])
            )
        return cls(**values)
