"""botsvc's front door: the nginx configuration rendered from the one
template, scripts/nginx/botsvc.conf (docs/production.md).

scripts/frontdoor.py (run by scripts/install-service) writes it for an
installation; the tests and ``scripts/bench frontdoor`` render the same
template (``frontdoor_process.py`` runs nginx with it). Limits are read from
botsvc itself (app/botsvc/connection/request_head.py, the settings of the env
file), never restated.
"""
from __future__ import annotations

import re
from dataclasses import dataclass, field
from pathlib import Path

from botsvc.config import Settings
from botsvc.connection import request_head
from botsvc.devkit.paths import REPO

TEMPLATE = REPO / "scripts" / "nginx" / "botsvc.conf"
ACME_PATH = "/.well-known/acme-challenge/"


@dataclass
class FrontDoor:
    """What the rendering fills in. ``listen``: nginx listen specs; empty means
    the public ports (80, or 443 with TLS, on IPv4 and IPv6)."""
    upstream: str                       # botsvc's BOTSVC_BIND
    body_max: int                       # botsvc's BOTSVC_UPLOAD_MAX_BYTES
    server_name: str = "_"
    listen: list[str] = field(default_factory=list)
    ipv6: bool = True
    log_dir: str = "/var/log/nginx"
    tls_cert: str | None = None
    tls_key: str | None = None
    acme_root: str | None = None        # certbot's webroot, served on port 80
    client_conns: int = 32
    client_rate: int = 100
    client_burst: int = 200

    @classmethod
    def for_settings(cls, settings: Settings, **options) -> FrontDoor:
        options.setdefault("upstream", settings.bind)
        return cls(body_max=settings.upload_max_bytes, **options)

    @property
    def tls(self) -> bool:
        return self.tls_cert is not None


def render(door: FrontDoor) -> str:
    values = {
        "UPSTREAM": door.upstream, "SERVER_NAME": door.server_name, "LOG_DIR": door.log_dir,
        "BODY_MAX": str(door.body_max),
        "LINE_MAX": str(request_head.REQUEST_LINE_MAX_BYTES),
        "FIELD_MAX": str(request_head.HEADER_FIELD_MAX_BYTES),
        "HEAD_MAX": str(request_head.HEAD_MAX_BYTES),
        "CLIENT_CONNS": str(door.client_conns), "CLIENT_RATE": str(door.client_rate),
        "CLIENT_BURST": str(door.client_burst),
        "LISTEN": _listen_lines(door), "PLAIN_HTTP_SERVER": _plain_http_server(door),
    }
    text = TEMPLATE.read_text()
    for name, value in values.items():
        text = text.replace(f"@{name}@", value)
    left = re.search(r"@[A-Z_]+@", text)
    if left:
        raise ValueError(f"the template names {left.group()}, which the rendering does not fill in")
    return text


def _ports(door: FrontDoor, port: int, suffix: str = "") -> list[str]:
    return [f"{port}{suffix}"] + ([f"[::]:{port}{suffix}"] if door.ipv6 else [])


def _listen_lines(door: FrontDoor) -> str:
    if door.tls:
        specs = door.listen or _ports(door, 443, " ssl http2")
        lines = [f"listen {spec};" for spec in specs] + [
            f"ssl_certificate {door.tls_cert};",
            f"ssl_certificate_key {door.tls_key};",
            "ssl_protocols TLSv1.2 TLSv1.3;",
            "ssl_session_cache shared:botsvc_tls:10m;",
            "ssl_session_timeout 1d;",
        ]
    else:
        lines = [f"listen {spec};" for spec in door.listen or _ports(door, 80)]
        lines += _acme_location(door)
    return "\n".join(f"    {line}" for line in lines)


def _acme_location(door: FrontDoor) -> list[str]:
    if door.acme_root is None:
        return []
    return [f"location ^~ {ACME_PATH} {{ root {door.acme_root}; default_type text/plain; }}"]


def _plain_http_server(door: FrontDoor) -> str:
    """With TLS, port 80 answers ACME's challenges and sends the rest to https."""
    if not door.tls or door.listen:
        return ""
    lines = [f"listen {spec};" for spec in _ports(door, 80)] + [
        f"server_name {door.server_name};",
        f"access_log {door.log_dir}/botsvc.access.log botsvc;",
        f"error_log {door.log_dir}/botsvc.error.log crit;",
        *_acme_location(door),
        "location / { return 308 https://$host$request_uri; }",
    ]
    return "\nserver {\n" + "\n".join(f"    {line}" for line in lines) + "\n}\n"


def read_env_file(path: str) -> dict[str, str]:
    """KEY=VALUE lines, as systemd's EnvironmentFile reads the simple ones."""
    values = {}
    for line in Path(path).read_text().splitlines():
        line = line.strip()
        if line and not line.startswith("#") and "=" in line:
            name, _, value = line.partition("=")
            values[name.strip()] = value.strip().strip('"').strip("'")
    return values
