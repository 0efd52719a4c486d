"""scripts/install-service renders units that systemd accepts (no systemd runs here)."""
import configparser
import os
import shutil
import subprocess
from pathlib import Path

import pytest
import trustme

from botsvc.config import Settings
from botsvc.devkit.frontdoor import read_env_file
from botsvc.devkit.frontdoor_process import nginx_test, write_configuration
from botsvc.devkit.paths import REPO

ROOT = REPO
SCRIPT = ROOT / "scripts" / "install-service"
UNITS = ("botsvc.service", "botsvc-backup.service", "botsvc-backup.timer")
INSTALLED_ENV = "/etc/botsvc/botsvc.env"


def render(out: Path, *args: str) -> subprocess.CompletedProcess:
    return subprocess.run([str(SCRIPT), "--render", str(out), *args],
                          capture_output=True, text=True, timeout=60)


def unit(path: Path) -> configparser.ConfigParser:
    parser = configparser.ConfigParser(strict=False, interpolation=None)
    parser.optionxform = str
    parser.read(path)
    return parser


def test_rendered_units_name_the_checkout_the_data_dir_and_the_user(tmp_path):
    done = render(tmp_path, "--data-dir", "/srv/bots", "--user", "botrunner",
                  "--backup-dir", "/srv/backups")
    assert done.returncode == 0, done.stderr
    assert sorted(p.name for p in tmp_path.iterdir()) == sorted((*UNITS, "botsvc-nginx.conf"))
    for name in UNITS:
        assert "@" not in (tmp_path / name).read_text().replace("@ROOT", "")
    service = unit(tmp_path / "botsvc.service")["Service"]
    assert service["ExecStart"] == f"{ROOT}/scripts/server"
    assert service["WorkingDirectory"] == str(ROOT)
    assert service["User"] == service["Group"] == "botrunner"
    assert service["Environment"] == "BOTSVC_DATA_DIR=/srv/bots"
    assert service["ReadWritePaths"] == "/srv/bots"
    assert service["Restart"] == "on-failure"
    for option, value in {"NoNewPrivileges": "yes", "ProtectSystem": "strict",
                          "ProtectHome": "yes", "PrivateTmp": "yes", "KillMode": "mixed"}.items():
        assert service[option] == value
    backup = unit(tmp_path / "botsvc-backup.service")["Service"]
    assert backup["ExecStart"] == f"{ROOT}/scripts/backup /srv/backups"
    assert backup["ReadWritePaths"] == "/srv/bots /srv/backups"
    assert unit(tmp_path / "botsvc-backup.timer")["Timer"]["Persistent"] == "true"


def test_a_replica_dir_is_writable_by_the_service(tmp_path):
    done = render(tmp_path, "--data-dir", "/srv/bots", "--replica-dir", "/mnt/replica/botsvc",
                  "--no-proxy")
    assert done.returncode == 0, done.stderr
    service = unit(tmp_path / "botsvc.service")["Service"]
    assert service["ReadWritePaths"] == "/srv/bots /mnt/replica/botsvc"
    assert "@" not in (tmp_path / "botsvc.service").read_text().replace("@ROOT", "")


def test_systemd_analyze_accepts_the_rendered_units(tmp_path):
    if shutil.which("systemd-analyze") is None:
        pytest.skip("systemd-analyze is not installed on this machine")
    assert render(tmp_path, "--no-proxy").returncode == 0
    verified = subprocess.run(["systemd-analyze", "verify", *(f"./{u}" for u in UNITS)],
                              cwd=tmp_path, capture_output=True, text=True, timeout=60)
    assert verified.returncode == 0, verified.stderr
    assert "botsvc" not in verified.stderr, verified.stderr  # no warning about our units


@pytest.mark.parametrize("args, message", [
    (("--data-dir", "relative/dir"), "directories must be absolute paths"),
    (("--backup-dir", "/srv/a b"), "must not contain spaces"),
    (("--user", "Root Admin"), "not a valid user name"),
    (("--frobnicate",), "unknown argument: --frobnicate"),
    (("--tls-cert", "/etc/ssl/bots.pem"), "--tls-cert and --tls-key go together"),
    (("--tls-cert", "bots.pem", "--tls-key", "bots.key"), "must be absolute paths"),
    (("--domain", "Bots.Example.org"), "--domain needs a public DNS name"),
    (("--domain", "localhost"), "--domain needs a public DNS name"),
    (("--acme-email", "me@example.org"), "--acme-email goes with --domain"),
    (("--client-rate", "0"), "--client-rate needs a whole number"),
])
def test_bad_arguments_are_refused_with_one_line(tmp_path, args, message):
    done = render(tmp_path / "out", *args)
    assert done.returncode == 2
    [line] = done.stderr.strip().splitlines()
    assert line.startswith("install-service: ") and message in line
    assert not (tmp_path / "out").exists()


# -- the front door (scripts/nginx/botsvc.conf, docs/production.md) ----------------

def rendered_proxy(out: Path, *args: str) -> str:
    done = render(out, *args)
    assert done.returncode == 0, done.stderr
    return (out / "botsvc-nginx.conf").read_text()


def accepted_by_nginx(rendered: str, directory: Path) -> None:
    write_configuration(directory, rendered)
    checked = nginx_test(directory)
    assert checked.returncode == 0, checked.stderr


def installed_settings() -> Settings:
    """What --render reads: the settings installed on this machine, if any."""
    env = read_env_file(INSTALLED_ENV) if os.path.exists(INSTALLED_ENV) else {}
    return Settings.from_env({k: v for k, v in env.items() if k.startswith("BOTSVC_")},
                             secret=False)


def test_the_front_door_answers_plain_http_without_a_certificate(tmp_path):
    rendered = rendered_proxy(tmp_path / "out")
    assert "listen 80;" in rendered and "listen [::]:80;" in rendered
    assert "ssl_certificate" not in rendered
    settings = installed_settings()    # botsvc's defaults on a machine without it
    assert f"server {settings.bind};" in rendered
    assert f"client_max_body_size {settings.upload_max_bytes};" in rendered
    assert "rate=100r/s" in rendered and "limit_conn botsvc_conns 32;" in rendered
    accepted_by_nginx(rendered, tmp_path / "nginx")


def test_the_front_door_serves_a_given_certificate(tmp_path):
    authority = trustme.CA()
    issued = authority.issue_cert("bots.example.org")
    cert, key = tmp_path / "bots.pem", tmp_path / "bots.key"
    issued.cert_chain_pems[0].write_to_path(str(cert))
    issued.private_key_pem.write_to_path(str(key))
    rendered = rendered_proxy(tmp_path / "out", "--domain", "bots.example.org",
                              "--tls-cert", str(cert), "--tls-key", str(key),
                              "--client-conns", "8", "--client-rate", "20",
                              "--client-burst", "40")
    assert "listen 443 ssl http2;" in rendered and f"ssl_certificate {cert};" in rendered
    assert "server_name bots.example.org;" in rendered
    assert "return 308 https://$host$request_uri;" in rendered   # port 80 sends to https
    assert "rate=20r/s" in rendered and "burst=40" in rendered
    assert "limit_conn botsvc_conns 8;" in rendered
    accepted_by_nginx(rendered, tmp_path / "nginx")


def test_a_public_name_gets_its_certificate_from_acme(tmp_path):
    rendered = rendered_proxy(tmp_path / "out", "--domain", "bots.example.org")
    live = "/etc/letsencrypt/live/bots.example.org"
    assert f"ssl_certificate {live}/fullchain.pem;" in rendered
    assert f"ssl_certificate_key {live}/privkey.pem;" in rendered
    assert "location ^~ /.well-known/acme-challenge/ { root /var/lib/botsvc-acme;" in rendered


def test_no_front_door_when_asked(tmp_path):
    assert render(tmp_path, "--no-proxy").returncode == 0
    assert sorted(p.name for p in tmp_path.iterdir()) == sorted(UNITS)
