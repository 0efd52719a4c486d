"""The README's quick start runs as written: its bash blocks, in one bash, from
the checkout, with the environment they set themselves, and again on the
same data dir, as someone trying it a second time would. Only the address
(a free port instead of 8080, which tests never take) and the data dir (a
temporary one instead of ./data) differ; scripts/server and the botsvc
command read both from the environment. And the mistake the quick start
warns of, JSON sent with curl's bare -d, is answered as it says."""
from __future__ import annotations

import json
import os
import re
import subprocess
from pathlib import Path

import pytest

from botsvc.devkit.paths import REPO
from botsvc.testkit.server import free_port, stop_process_group

README = REPO / "README.md"
DEFAULT_ADDRESS = "127.0.0.1:8080"


def quick_start_blocks() -> list[str]:
    text = README.read_text(encoding="utf-8")
    section = text.split("\n## Quick start\n", 1)[1].split("\n## ", 1)[0]
    return re.findall(r"^```bash\n(.*?)^```$", section, re.MULTILINE | re.DOTALL)


def run_quick_start(tmp_path: Path, extra: str = "", run: int = 1
                    ) -> subprocess.CompletedProcess:
    blocks = quick_start_blocks()
    assert blocks, "the quick start shows no bash block"
    address = f"127.0.0.1:{free_port()}"
    script = "set -e\n" + "\n".join(blocks) + extra
    env = {name: value for name, value in os.environ.items()
           if not name.startswith("BOTSVC_")}
    env.update(BOTSVC_BIND=address, BOTSVC_DATA_DIR=str(tmp_path / "data"),
               BOTSVC_ACCESS_LOG="0")
    # Files, not pipes: the server left running in the background would hold
    # a pipe open after bash exits.
    out, err = tmp_path / f"stdout-{run}", tmp_path / f"stderr-{run}"
    with open(out, "w") as stdout, open(err, "w") as stderr:
        process = subprocess.Popen(["bash", "-c", script.replace(DEFAULT_ADDRESS, address)],
                                   cwd=REPO, env=env, stdin=subprocess.DEVNULL,
                                   stdout=stdout, stderr=stderr, start_new_session=True)
    try:
        process.wait(timeout=60)
    finally:
        # The block leaves scripts/server running in the background: stop it.
        stop_process_group(process, timeout=10)
    return subprocess.CompletedProcess(process.args, process.returncode,
                                       out.read_text(), err.read_text())


def json_values(text: str) -> list:
    """The JSON values printed one after another (curl adds no newline)."""
    decoder, values, at = json.JSONDecoder(), [], 0
    while (at := len(text) - len(text[at:].lstrip())) < len(text):
        value, at = decoder.raw_decode(text, at)
        values.append(value)
    return values


# What the quick start warns of: the same call with curl's bare -d, JSON
# text labelled a form (one whose text has an "=" too).
MISTAKES = ["{}", '{"offset": 0, "note": "a=b"}']


@pytest.mark.server
def test_the_quick_start_runs_as_written_and_its_warning_holds(tmp_path):
    done = run_quick_start(tmp_path, "".join(
        f"\ncurl -s -H \"Authorization: Bearer $TOKEN\" -d '{body}' "
        f"http://{DEFAULT_ADDRESS}/v2/getUpdates" for body in MISTAKES))
    assert done.returncode == 0, done.stderr[-3000:]
    answers = json_values(done.stdout)
    created_user, started, updates, *refusals = answers
    assert created_user == {"user_id": 1}
    assert re.match(r"^vc_[0-9a-f]{40}$", started["chat_id"])
    assert updates["ok"] is True
    [update] = updates["result"]
    assert update["message"]["text"] == "/start hello"
    assert update["membership"] == {"chat_id": started["chat_id"], "status": "active",
                                    "start_parameter": "hello"}
    [token] = re.findall(r'"token": "(1:[A-Za-z0-9_-]{43})"', done.stderr)   # shown once
    # Shown without truncating a stderr redirected to a file, as a CI log is
    # (tee /dev/stderr reopens that file from its start): what came before stays.
    assert f"botsvc: using the data dir {tmp_path / 'data'}" in done.stderr

    assert len(refusals) == len(MISTAKES)
    for body, refused in zip(MISTAKES, refusals, strict=True):
        assert (refused["ok"], refused["error_code"]) == (False, "INVALID_PARAMETER")
        assert refused["parameters"] == {"field": body.split("=")[0]}
        description = refused["description"]
        assert description.startswith(f"Unknown parameter: {body.split('=')[0]}. "
                                      "The body was read as a form"), description
        assert "(Content-Type: application/x-www-form-urlencoded," in description
        assert "Content-Type: application/json" in description

    # A second run on the same data dir (the first run's server stopped, as
    # after a reboot): the bot exists, so its token is rotated, and the last
    # call answers with both Starts, the first never acknowledged.
    again = run_quick_start(tmp_path, run=2)
    assert again.returncode == 0, again.stderr[-3000:]
    created_user, started_again, updates = json_values(again.stdout)
    assert created_user == {"user_id": 2} and started_again["chat_id"] == started["chat_id"]
    assert updates["ok"] is True
    assert [u["message"]["text"] for u in updates["result"]] == ["/start hello"] * 2
    taken = json.loads(next(line for line in again.stderr.splitlines()
                            if line.startswith('{"ok": false')))
    assert (taken["error_code"], taken["parameters"]) == ("INVALID_PARAMETER",
                                                          {"field": "username"})
    [new_token] = re.findall(r'"token": "(1:[A-Za-z0-9_-]{43})"', again.stderr)
    assert new_token != token
