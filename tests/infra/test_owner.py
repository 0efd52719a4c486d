"""Owners of claims and leftover files (app/botsvc/owner.py), and media tools that
die with the process that started them (issue 13 point 4)."""
from __future__ import annotations

import os
import signal
import subprocess
import sys
import time

from botsvc import owner
from botsvc.devkit.owners import alive, dead_owner, processes
from botsvc.devkit.paths import REPO


def test_this_process_is_alive_and_a_finished_one_is_not():
    token = owner.current()
    assert owner.is_alive(token) is True
    assert owner.owner_of(owner.file_prefix("upload") + "x1y2z3") == token
    assert owner.is_alive(dead_owner()) is False


def test_a_reused_pid_a_reboot_and_the_unknown_are_told_apart():
    boot, namespace, pid, start = owner.current().split("-")
    # Same pid, another start time: the pid was reused, the owner is gone.
    assert owner.is_alive(f"{boot}-{namespace}-{pid}-{int(start) + 1}") is False
    assert owner.is_alive(f"{'0' * 12}-{namespace}-{pid}-{start}") is False  # another boot
    assert owner.is_alive(f"{boot}-1-{pid}-{start}") is None  # another pid namespace
    for unknown in (None, "", "nonsense", "upload-stale"):
        assert owner.is_alive(unknown) is None
    assert owner.owner_of("upload-stale") is None and owner.owner_of("job-abc") is None


def test_a_new_process_gets_its_own_token():
    code = "from botsvc import owner; print(owner.current())"
    theirs = subprocess.run([sys.executable, "-c", code], cwd=REPO, capture_output=True,
                            text=True, check=True, timeout=60).stdout.strip()
    assert theirs != owner.current()
    assert owner.is_alive(theirs) is False  # it has exited


RUN_A_TOOL = """
import sys
from botsvc.media.runner import run_tool
run_tool(["sleep", "60"], dependency="tool", cwd=sys.argv[1], timeout=120,
         memory_bytes=2 << 30)
"""


def test_a_tool_dies_with_the_process_that_started_it(tmp_path):
    starter = subprocess.Popen([sys.executable, "-c", RUN_A_TOOL, str(tmp_path)], cwd=REPO,
                               start_new_session=True)
    try:
        deadline = time.monotonic() + 30
        while not (tools := [pid for pid, name, parent in processes()
                             if name == "sleep" and parent == starter.pid]):
            assert time.monotonic() < deadline and starter.poll() is None, "the tool never started"
            time.sleep(0.05)
        tool = tools[0]
        # In the starter's process group, so a signal to the whole server reaches it ...
        assert os.getpgid(tool) == os.getpgid(starter.pid)
        # ... and killed by the kernel when only the starter dies (SIGKILL: no
        # clean-up code of the starter runs).
        os.kill(starter.pid, signal.SIGKILL)
        starter.wait()
        deadline = time.monotonic() + 10
        while alive(tool):
            assert time.monotonic() < deadline, "the tool outlived the process that started it"
            time.sleep(0.05)
    finally:
        if starter.poll() is None:
            os.killpg(starter.pid, signal.SIGKILL)
            starter.wait()
