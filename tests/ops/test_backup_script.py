"""scripts/backup (what the backup timer runs): a dated, verified backup into
a directory, keeping the newest BOTSVC_BACKUP_KEEP."""
import json
import os
import subprocess

from botsvc.devkit.paths import REPO

ROOT = REPO


def run(*args: str, env: dict) -> subprocess.CompletedProcess:
    return subprocess.run([str(ROOT / "scripts" / "backup"), *args], capture_output=True,
                          text=True, timeout=120, env={**os.environ, **env})


def test_backups_are_dated_verified_and_the_oldest_removed(tmp_path):
    data, backups = tmp_path / "data", tmp_path / "backups"
    env = {"BOTSVC_DATA_DIR": str(data), "BOTSVC_BACKUP_KEEP": "2"}
    subprocess.run([str(ROOT / ".venv" / "bin" / "botsvc"), "migrate"], check=True,
                   env={**os.environ, **env}, capture_output=True, timeout=60)
    made = []
    for _ in range(3):
        done = run(str(backups), env=env)
        assert done.returncode == 0, done.stderr
        made.append(sorted(p.name for p in backups.iterdir()))
    assert len(made[0]) == 1 and len(made[1]) == 2 and len(made[2]) == 2
    assert made[0][0] not in made[2]                      # the oldest went
    assert set(made[1]) - {made[0][0]} <= set(made[2])    # the newer ones stayed
    for name in made[2]:
        assert name.startswith("botsvc-")
        assert json.loads((backups / name / "backup.json").read_text())
    assert "removed" in done.stderr and made[0][0] in done.stderr


def test_a_bad_keep_is_refused_before_anything_is_written(tmp_path):
    done = run(str(tmp_path / "backups"), env={"BOTSVC_DATA_DIR": str(tmp_path / "data"),
                                               "BOTSVC_BACKUP_KEEP": "0"})
    assert done.returncode == 2
    assert done.stderr.strip() == "BOTSVC_BACKUP_KEEP must be a positive integer, got '0'"
    assert not (tmp_path / "backups").exists()


def test_a_failed_backup_removes_nothing_older(tmp_path):
    backups = tmp_path / "backups"
    (backups / "botsvc-20260101T000000Z").mkdir(parents=True)
    done = run(str(backups), env={"BOTSVC_DATA_DIR": str(tmp_path / "no-such-data"),
                                  "BOTSVC_BACKUP_KEEP": "1"})
    assert done.returncode != 0
    assert [p.name for p in backups.iterdir()] == ["botsvc-20260101T000000Z"]
