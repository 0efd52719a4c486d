"""The ``botsvc`` command says which installation it acts on: an operator
command acts on a data dir that holds a database (it never makes one: only
serve, migrate and restore do) and says which on stderr, or on a running
server through /manage/v1 (BOTSVC_URL or --url, with the admin token), with
the same schemas deciding; and ``serve`` refuses a taken port in one line
before anything claims to serve."""
from __future__ import annotations

import json
import os
import re
import socket
import subprocess
import threading
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer

import pytest
import requests

from botsvc.devkit.paths import REPO
from botsvc.devkit.servers import ADMIN_TOKEN, running_server
from botsvc.testkit.server import free_port
from tests.support.cli import Done, botsvc
from tests.support.media_files import image_bytes

NOT_HERE = {"BOTSVC_DATA_DIR": None, "BOTSVC_URL": None, "BOTSVC_ADMIN_TOKEN": None}


def one_line(done: Done) -> str:
    assert done.returncode == 1, (done.stdout, done.stderr)
    assert done.stdout == ""
    [line] = done.stderr.strip().splitlines()
    return line


@pytest.mark.parametrize("args", [("create-bot", "elsewhere_bot"), ("list-bots",),
                                  ("user-start", "1", "1"), ("bot-calls", "1")])
def test_an_operator_command_elsewhere_fails_naming_the_data_dir_and_makes_none(
        tmp_path, monkeypatch, args):
    monkeypatch.chdir(tmp_path)   # "another directory": the default ./data is not there
    line = one_line(botsvc(*args, env=NOT_HERE))
    assert line.startswith(f"botsvc: no installation in {tmp_path / 'data'} (no botsvc.sqlite3"
                           " there): set BOTSVC_DATA_DIR to the server's data dir, or BOTSVC_URL"
                           " and BOTSVC_ADMIN_TOKEN"), line
    assert os.listdir(tmp_path) == []


def test_openapi_and_check_media_elsewhere_make_no_data_dir(tmp_path, monkeypatch,
                                                           offline_signature_db):
    monkeypatch.chdir(tmp_path)
    printed = botsvc("openapi", env=NOT_HERE)
    assert printed.returncode == 0 and json.loads(printed.stdout)["openapi"].startswith("3.1")
    checked = botsvc("check-media", env={**NOT_HERE, "BOTSVC_CLAMAV_DB": offline_signature_db,
                                         "BOTSVC_CLAMD_SOCKET": None})
    assert (checked.returncode, checked.stdout) == (0, "media tools and scanner: OK\n")
    assert os.listdir(tmp_path) == []


def test_an_operator_command_says_which_data_dir_it_used(tmp_path):
    env = {**NOT_HERE, "BOTSVC_DATA_DIR": str(tmp_path / "data")}
    assert botsvc("migrate", env=env).returncode == 0
    listed = botsvc("list-bots", env=env)
    assert listed.returncode == 0 and json.loads(listed.stdout) == []
    assert listed.stderr == f"botsvc: using the data dir {tmp_path / 'data'}\n"


@pytest.mark.parametrize("env, args, expected", [
    ({"BOTSVC_URL": "http://127.0.0.1:1"}, (),
     "botsvc: acting on http://127.0.0.1:1 needs the admin token: set BOTSVC_ADMIN_TOKEN"
     " to the server's"),
    ({"BOTSVC_URL": "127.0.0.1:8080"}, (),
     "botsvc: BOTSVC_URL must be an http or https URL without query, got '127.0.0.1:8080'"),
    ({}, ("--url", "ftp://example.org"),
     "botsvc: --url must be an http or https URL without query, got 'ftp://example.org'"),
])
def test_a_server_address_is_checked_in_one_line(tmp_path, env, args, expected):
    line = one_line(botsvc("list-bots", *args, env={
        **NOT_HERE, "BOTSVC_DATA_DIR": str(tmp_path / "data"), **env}))
    assert line == expected
    assert not (tmp_path / "data").exists()


def test_a_server_that_is_not_there_is_one_line_after_the_address():
    url = f"http://127.0.0.1:{free_port()}"
    done = botsvc("list-bots", env={**NOT_HERE, "BOTSVC_URL": url, "BOTSVC_ADMIN_TOKEN": "t"})
    assert (done.returncode, done.stdout) == (1, "")
    assert done.stderr.splitlines() == [
        f"botsvc: using the server at {url}",
        f"botsvc: cannot reach {url}: connection refused: is the server running there?"]


def test_an_address_where_something_else_answers_is_one_line():
    """Not botsvc's operator API (a web page, say): named, not parsed."""
    class Page(BaseHTTPRequestHandler):
        def do_POST(self):
            self.send_response(200)
            self.send_header("Content-Type", "text/html")
            self.send_header("Content-Length", "15")
            self.end_headers()
            self.wfile.write(b"<html>hi</html>")

        def log_message(self, *args):
            pass

    page = ThreadingHTTPServer(("127.0.0.1", 0), Page)
    threading.Thread(target=page.serve_forever, daemon=True).start()
    url = f"http://127.0.0.1:{page.server_address[1]}"
    try:
        done = botsvc("list-bots", env={**NOT_HERE, "BOTSVC_URL": url,
                                        "BOTSVC_ADMIN_TOKEN": "t"})
    finally:
        page.shutdown()
        page.server_close()
    assert (done.returncode, done.stdout) == (1, "")
    assert done.stderr.splitlines()[1:] == [
        f"botsvc: {url} answered 200 OK, which is not botsvc's operator API (is it the"
        " server's address?)"]


def test_serve_on_a_taken_port_says_so_in_one_line(tmp_path):
    with socket.socket() as holder:
        holder.bind(("127.0.0.1", 0))
        holder.listen()
        bind = f"127.0.0.1:{holder.getsockname()[1]}"
        env = {name: value for name, value in os.environ.items()
               if not name.startswith("BOTSVC_")}
        env.update(BOTSVC_BIND=bind, BOTSVC_DATA_DIR=str(tmp_path / "data"))
        done = subprocess.run([REPO / ".venv" / "bin" / "botsvc", "serve"], env=env,
                              capture_output=True, text=True, timeout=60)
    assert done.returncode == 1 and done.stdout == ""
    assert done.stderr.splitlines() == [
        f"botsvc: cannot serve on {bind}: the address is already in use (another botsvc, or"
        " another program, listens there): stop it, or set BOTSVC_BIND to a free port"]
    assert not (tmp_path / "data").exists()   # nothing migrated, nothing written


@pytest.mark.server
def test_operator_commands_act_on_a_running_server_through_its_operator_api(tmp_path):
    with running_server(tmp_path) as server:
        env = {**NOT_HERE, "BOTSVC_DATA_DIR": str(tmp_path / "nowhere"),
               "BOTSVC_URL": server.base_url, "BOTSVC_ADMIN_TOKEN": ADMIN_TOKEN}

        def cli(*args: str):
            done = botsvc(*args, env=env)
            assert done.returncode == 0, done.stderr
            assert done.stderr == f"botsvc: using the server at {server.base_url}\n"
            return json.loads(done.stdout)

        created = cli("create-bot", "remote_bot", "--display-name", "Remote")
        auth = {"Authorization": f"Bearer {created['token']}"}
        me = requests.post(f"{server.base_url}/v2/getMe", json={}, headers=auth, timeout=30)
        assert me.json() == {"ok": True, "result": created["bot"]}   # the server's own bot
        user = cli("create-user")["user_id"]
        bot_id = str(created["bot"]["id"])
        chat_id = cli("user-start", str(user), bot_id, "--start-parameter", "ref")["chat_id"]
        assert cli("user-send", str(user), bot_id, "5")["text"] == "5"   # text stays text
        photo = tmp_path / "photo.png"
        photo.write_bytes(image_bytes("PNG"))
        sent = cli("user-send-media", str(user), bot_id, str(photo), "--caption", "remote")
        assert (sent["type"], sent["caption"]) == ("photo", "remote")
        assert sent["media"]["file_name"] == "photo.png"
        assert cli("set-bot-disabled", bot_id) is True
        assert [bot["disabled"] for bot in cli("list-bots")] == [True]
        assert cli("set-bot-disabled", bot_id, "--enable") is True
        updates = requests.post(f"{server.base_url}/v2/getUpdates", json={}, headers=auth,
                                timeout=30).json()["result"]
        assert updates[0]["membership"] == {"chat_id": chat_id, "status": "active",
                                            "start_parameter": "ref"}

        # A refusal is the API's envelope, as /manage/v1 answers it.
        taken = botsvc("create-bot", "remote_bot", env=env)
        assert taken.returncode == 1 and taken.stdout == ""
        refused = json.loads(taken.stderr.strip().splitlines()[-1])
        direct = requests.post(f"{server.base_url}/manage/v1/createBot", timeout=30,
                               json={"username": "remote_bot"}, headers=server.admin_headers)
        assert refused == direct.json() and refused["parameters"] == {"field": "username"}
        wrong = botsvc("list-bots", "--url", server.base_url,
                       env={**env, "BOTSVC_URL": None, "BOTSVC_ADMIN_TOKEN": "not-the-token"})
        assert wrong.returncode == 1
        assert json.loads(wrong.stderr.strip().splitlines()[-1])["error_code"] == "UNAUTHORIZED"
    assert not (tmp_path / "nowhere").exists()
    assert not re.search(re.escape(ADMIN_TOKEN), server.log_path.read_text())
