"""One tree of botsvc in a process of its own, for ``scripts/bench percall``.

    python scripts/percall_child.py TREE DATA_DIR

imports TREE's own code (a checkout: the current one, or the baseline's
worktree) from its package folder (scripts/tree_import.py), under the name that tree uses (``app``
before the wheel installed ``botsvc``, ``botsvc`` since: scripts/tree_import.py),
builds the app with the Flask test client, a bot, a user and a
chat, then answers commands on stdin, one a line: ``sendMessage N`` or
``getMe N`` makes N calls and prints ``{"wall": s, "cpu": s}`` for the N.
With ``--once METHOD N`` it makes the calls and exits (for callgrind, which
counts the instructions of the whole process: the difference between two
runs of different N is the calls' own). With ``--where`` it prints the
tree's import name and the file of each of its modules it loaded, and exits
(tests/ops/test_bench_trees.py).

Stand-alone on purpose: it must run the baseline's code, so it imports
nothing of the tree it lives in (tree_import is the standard library only). The app is set up as gunicorn's worker
sets it up: the log configured (the access line written, to stderr, which
the parent sends to /dev/null), metrics counted into multiprocess files,
and rate limits in force (high enough never to refuse).
"""
from __future__ import annotations

import glob
import importlib
import json
import os
import sqlite3
import sys
import time

from tree_import import install, package_folder, package_name  # scripts/, this script's folder

ADMIN = "percall-admin-token"
HIGH = 1_000_000   # a limit in force that never refuses: the rate path runs


def build(tree: str, data_dir: str):
    os.chdir(tree)
    os.environ["PROMETHEUS_MULTIPROC_DIR"] = os.path.join(data_dir, "metrics")
    os.makedirs(os.environ["PROMETHEUS_MULTIPROC_DIR"], exist_ok=True)
    name = install(tree)
    logs = importlib.import_module(f"{name}.logs")
    Settings = importlib.import_module(f"{name}.config").Settings
    try:
        create_app = importlib.import_module(f"{name}.factory").create_app
    except ModuleNotFoundError as missing:   # the baseline: the factory was app/__init__.py
        if missing.name != f"{name}.factory":
            raise
        create_app = importlib.import_module(name).create_app
    package = sys.modules[name]
    assert os.path.dirname(os.path.abspath(package.__file__)) == str(package_folder(tree)), \
        package.__file__
    # The bot's call log (on by default) turned off: PERCALL_CALL_LOG=off
    # (the baseline has none, nor the setting).
    off = {"call_log": False} if os.environ.get("PERCALL_CALL_LOG") == "off" else {}
    settings = Settings.from_env({}, data_dir=data_dir, admin_token=ADMIN,
                                 rate_api_per_sec=HIGH, rate_sends_per_sec=HIGH,
                                 rate_uploads_per_min=HIGH, rate_broadcasts_per_min=HIGH,
                                 **off)
    logs.configure(settings.log_format)
    return create_app(settings)


# The server's job checkpoints the WAL every second (commits never do), so
# its WAL stays short; here nothing would, and a WAL grown by thousands of
# calls makes every page read search more of its index, billing each call.
CHECKPOINT_EVERY = 200   # calls: about a second's worth at one connection


def setup(app, data_dir: str) -> dict:
    client = app.test_client()
    admin = {"Authorization": f"Bearer {ADMIN}"}

    def operator(method: str, **params):
        response = client.post(f"/manage/v1/{method}", json=params, headers=admin)
        assert response.status_code == 200, response.get_data(as_text=True)
        return response.get_json()["result"]

    created = operator("createBot", username="percall_bot")
    user = operator("createUser")["user_id"]
    chat = operator("userStart", user_id=user, bot_id=created["bot"]["id"])["chat_id"]
    auth = {"Authorization": f"Bearer {created['token']}"}
    send = json.dumps({"chat_id": chat, "text": "benchmark message"}).encode()
    calls = {"sendMessage": ("/v2/sendMessage", send), "getMe": ("/v2/getMe", b"{}")}

    database, = glob.glob(os.path.join(data_dir, "*.sqlite3"))   # each tree names its own
    wal = sqlite3.connect(database, isolation_level=None)

    def run(method: str, n: int) -> None:
        path, body = calls[method]
        for done in range(1, n + 1):
            response = client.post(path, data=body, headers=auth,
                                   content_type="application/json")
            if response.status_code != 200:
                raise SystemExit(f"{method}: {response.get_data(as_text=True)}")
            if done % CHECKPOINT_EVERY == 0:
                wal.execute("PRAGMA wal_checkpoint(PASSIVE)").fetchall()
    return {"run": run}


def where(tree: str) -> dict:
    """The tree's import name and the file of every module of it loaded."""
    name = package_name(tree)
    return {"name": name, "files": sorted(
        module.__file__ for key, module in list(sys.modules.items())
        if (key == name or key.startswith(name + ".")) and getattr(module, "__file__", None))}


def main(argv: list[str]) -> None:
    tree, data_dir = os.path.abspath(argv[0]), argv[1]
    app = build(tree, data_dir)
    if argv[2:3] == ["--where"]:
        print(json.dumps(where(tree)))
        return
    bench = setup(app, data_dir)
    bench["run"]("sendMessage", 50)   # warm-up: caches, lazy imports, first rows
    bench["run"]("getMe", 50)
    if len(argv) > 2 and argv[2] == "--once":
        bench["run"](argv[3], int(argv[4]))
        return
    print("ready", flush=True)
    for line in sys.stdin:
        method, n = line.split()
        wall, cpu = time.perf_counter(), time.process_time()
        bench["run"](method, int(n))
        print(json.dumps({"wall": time.perf_counter() - wall,
                          "cpu": time.process_time() - cpu}), flush=True)


if __name__ == "__main__":
    main(sys.argv[1:])
