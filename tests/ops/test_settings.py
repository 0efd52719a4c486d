"""One Settings object (app/botsvc/config.py): every BOTSVC_* variable is read and
checked there, a bad value stops every way of starting (scripts/server,
gunicorn, the botsvc command) with one line naming the setting and no
traceback, and the README's Settings table lists every setting."""
from __future__ import annotations

import os
import pathlib
import re
import subprocess
import sys

import pytest

from botsvc.config import SettingError, Settings
from botsvc.devkit.paths import REPO
from botsvc.media import MediaConfig

BIN = pathlib.Path(sys.executable).parent

# (setting, bad value, words the one line must hold)
BAD_VALUES = [
    ("BOTSVC_RATE_API_PER_SEC", "fast", "must be an integer"),          # non-integer
    ("BOTSVC_STORAGE_QUOTA_BYTES", "-1", "must not be negative"),        # negative
    ("BOTSVC_UPLOAD_MAX_BYTES", "104857601", "at most 104857600"),       # out of range
    ("BOTSVC_WORKERS", "0", "at least 1"),
    ("BOTSVC_THREADS", "1000", "at most 256"),
    ("BOTSVC_LOG_FORMAT", "xml", "must be one of text, json"),           # bad choice
    ("BOTSVC_TEST_TOOLS", "maybe", "must be 0 or 1"),
    ("BOTSVC_ACCESS_LOG", "2", "must be 0 or 1"),
    ("BOTSVC_BIND", "localhost", "HOST:PORT"),
    ("BOTSVC_BIND", "127.0.0.1:70000", "1 to 65535"),
    ("BOTSVC_BASE_URL", "ftp://example.org", "http or https"),
    ("BOTSVC_MEDIA_TOOL_TIMEOUT", "soon", "number of seconds"),           # the media settings
    ("BOTSVC_MEDIA_SCAN_TIMEOUT", "0", "above 0"),
    ("BOTSVC_MEDIA_TOOL_MEMORY_BYTES", "1000", "at least 67108864"),
    ("BOTSVC_HISTORY_RETENTION_DAYS", "1e3", "must be an integer"),
    ("BOTSVC_URL", "127.0.0.1:8080", "http or https"),                 # no scheme
    ("BOTSVC_MEDIA_CHECK", "never", "must be one of start, lazy"),
]
# The kinds the issue names, for the real starts (each start costs a process).
START_CASES = [BAD_VALUES[i] for i in (0, 1, 2, 5, 12)]
COMMANDS = {"BOTSVC_RATE_API_PER_SEC": "migrate", "BOTSVC_STORAGE_QUOTA_BYTES": "list-bots",
            "BOTSVC_UPLOAD_MAX_BYTES": "backup", "BOTSVC_LOG_FORMAT": "check-media",
            "BOTSVC_MEDIA_SCAN_TIMEOUT": "create-user"}


@pytest.mark.parametrize(("name", "value", "words"), BAD_VALUES)
def test_a_bad_value_is_one_line_naming_the_setting(tmp_path, name, value, words):
    with pytest.raises(SettingError) as refused:
        Settings.from_env({"BOTSVC_DATA_DIR": str(tmp_path), name: value}, secret=False)
    message = str(refused.value)
    assert message.startswith(f"botsvc: {name} ") and words in message
    assert "\n" not in message and refused.value.setting == name
    assert isinstance(refused.value, SystemExit)


def test_the_defaults_and_good_values(tmp_path):
    plain = Settings.from_env({"BOTSVC_DATA_DIR": str(tmp_path)}, secret=False)
    assert (plain.bind, plain.base_url, plain.workers, plain.threads) == (
        "127.0.0.1:8080", "http://127.0.0.1:8080", 2, 4)
    assert (plain.access_log, plain.test_tools, plain.log_format) == (True, False, "text")
    assert plain.secret_key == b"" and not (tmp_path / "secret_key").exists()
    tuned = Settings.from_env({
        "BOTSVC_DATA_DIR": str(tmp_path), "BOTSVC_BIND": "[::1]:9000", "BOTSVC_WORKERS": "3",
        "BOTSVC_ACCESS_LOG": "0", "BOTSVC_TEST_TOOLS": "yes", "BOTSVC_LOG_FORMAT": "JSON",
        "BOTSVC_BASE_URL": "https://bots.example.org/", "BOTSVC_MEDIA_SCAN_TIMEOUT": "2.5",
        "BOTSVC_MEDIA_TOOL_MEMORY_BYTES": str(1 << 30)}, secret=False)
    assert (tuned.bind, tuned.workers, tuned.access_log, tuned.test_tools) == (
        "[::1]:9000", 3, False, True)
    assert (tuned.log_format, tuned.base_url) == ("json", "https://bots.example.org")
    media = MediaConfig.from_settings(tuned)
    assert (media.scan_timeout, media.tool_memory_bytes) == (2.5, 1 << 30)


def one_line_refusal(done: subprocess.CompletedProcess, name: str, words: str) -> None:
    assert done.returncode != 0
    assert "Traceback" not in done.stderr + done.stdout
    lines = done.stderr.strip().splitlines()
    assert lines and lines[-1].startswith(f"botsvc: {name} ") and words in lines[-1], (
        done.stderr)


def start_env(tmp_path, name, value) -> dict:
    env = {key: val for key, val in os.environ.items() if not key.startswith("BOTSVC_")}
    # An explicit signature database skips scripts/server's offline one.
    return {**env, "BOTSVC_DATA_DIR": str(tmp_path / "data"), "BOTSVC_CLAMAV_DB": "/nonexistent",
            name: value}


@pytest.mark.parametrize(("name", "value", "words"), START_CASES)
def test_the_botsvc_command_refuses_a_bad_value(tmp_path, name, value, words):
    command = [COMMANDS[name]] + ([str(tmp_path / "copy")] if COMMANDS[name] == "backup" else [])
    done = subprocess.run([str(BIN / "botsvc"), *command], env=start_env(tmp_path, name, value),
                          capture_output=True, text=True, timeout=60)
    one_line_refusal(done, name, words)
    assert not (tmp_path / "data").exists()


@pytest.mark.server
@pytest.mark.parametrize(("name", "value", "words"), START_CASES)
def test_gunicorn_refuses_a_bad_value(tmp_path, name, value, words):
    done = subprocess.run([str(BIN / "gunicorn"), "-c", str(REPO / "app" / "botsvc" / "gunicorn_conf.py"),
                           "--chdir", str(REPO), "wsgi:app"],
                          env=start_env(tmp_path, name, value), capture_output=True, text=True,
                          timeout=60)
    one_line_refusal(done, name, words)


@pytest.mark.server
@pytest.mark.parametrize(("name", "value", "words"), START_CASES)
def test_scripts_server_refuses_a_bad_value(tmp_path, name, value, words):
    done = subprocess.run([str(REPO / "scripts" / "server")], env=start_env(tmp_path, name, value),
                          capture_output=True, text=True, timeout=120, cwd=tmp_path)
    one_line_refusal(done, name, words)


def settings_table() -> str:
    readme = (REPO / "README.md").read_text()
    return readme.split("\n## Settings\n", 1)[1].split("\n## ", 1)[0]


def test_the_readme_lists_every_setting():
    read_here = set(re.findall(r'"(BOTSVC_[A-Z_]+)"', (REPO / "app" / "botsvc" / "config.py").read_text()))
    listed = {row.split("|")[1].strip() for row in settings_table().splitlines()
              if row.startswith("| BOTSVC_")}
    assert read_here <= listed, read_here - listed


def test_no_other_module_reads_the_environment():
    readers = {str(path.relative_to(REPO)) for path in (REPO / "app" / "botsvc").rglob("*.py")
               if re.search(r"os\.environ|getenv", path.read_text()) and path.name != "config.py"}
    # The testing kit's server passes the environment on to its child, and
    # so does `botsvc serve` to the gunicorn it becomes; prometheus_client takes its multiprocess directory from its own
    # variable, which app/botsvc/metrics.py sets for the workers and reads back.
    # The development kit's fuzzer (never part of the service) runs
    # schemathesis with the developer's environment. The pytest plugin's
    # settings (testkit/options.py) are not the service's: each is an option,
    # an ini key and, last, a variable; a bot under test as a process
    # (testkit/bot_process.py) gets the test run's environment.
    assert readers <= {"app/botsvc/testkit/server.py", "app/botsvc/metrics.py", "app/botsvc/cli/serve.py",
                       "app/botsvc/devkit/fuzz.py", "app/botsvc/testkit/options.py",
                       "app/botsvc/testkit/bot_process.py"}, readers
