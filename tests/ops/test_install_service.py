"""scripts/install-service renders units that systemd accepts (no systemd runs here)."""
import configparser
import shutil
import subprocess
from pathlib import Path

import pytest

from tests.support.paths import REPO

ROOT = REPO
SCRIPT = ROOT / "scripts" / "install-service"
UNITS = ("botsvc.service", "botsvc-backup.service", "botsvc-backup.timer")


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
    assert sorted(p.name for p in tmp_path.iterdir()) == sorted(UNITS)
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


def test_systemd_analyze_accepts_the_rendered_units(tmp_path):
    if shutil.which("systemd-analyze") is None:
        pytest.skip("systemd-analyze is not installed on this machine")
    assert render(tmp_path).returncode == 0
    verified = subprocess.run(["systemd-analyze", "verify", *(f"./{u}" for u in UNITS)],
                              cwd=tmp_path, capture_output=True, text=True, timeout=60)
    assert verified.returncode == 0, verified.stderr
    assert "botsvc" not in verified.stderr, verified.stderr  # no warning about our units


@pytest.mark.parametrize("args, message", [
    (("--data-dir", "relative/dir"), "directories must be absolute paths"),
    (("--backup-dir", "/srv/a b"), "must not contain spaces"),
    (("--user", "Root Admin"), "not a valid user name"),
    (("--frobnicate",), "unknown argument: --frobnicate"),
])
def test_bad_arguments_are_refused_with_one_line(tmp_path, args, message):
    done = render(tmp_path / "out", *args)
    assert done.returncode == 2
    [line] = done.stderr.strip().splitlines()
    assert line.startswith("install-service: ") and message in line
    assert not (tmp_path / "out").exists()
