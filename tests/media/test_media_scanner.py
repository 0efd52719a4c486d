"""ClamAV: the offline test database, clamscan, clamd, and failing closed."""
from __future__ import annotations

import dataclasses
import os
import socket
import subprocess
import threading

import pytest

from botsvc.devkit.paths import REPO
from botsvc.media import check_dependencies, needs_offline_database, signatures
from botsvc.media.signatures import DB_FILE, eicar_bytes, has_signatures

CLEAN_TEXT = b"nothing to see here\n"


pytestmark = pytest.mark.clamscan   # its tests; clamd_config below for clamd


def test_eicar_bytes_are_the_standard_test_string():
    data = eicar_bytes()
    assert len(data) == 68
    assert data.startswith(b"X5O!P%@AP[4\\PZX54(P^)7CC)7}$EICAR") and data.endswith(b"$H+H*")


def test_the_signature_finder_sees_what_clamscan_loads(offline_signature_db, tmp_path):
    empty = tmp_path / "empty"
    empty.mkdir()
    official = tmp_path / "official"
    official.mkdir()
    for name in ("main.cvd", "daily.cld", "bytecode.cud"):
        (official / name).write_bytes(b"x")
        assert has_signatures(str(official / name))
    assert has_signatures(offline_signature_db)
    assert has_signatures(os.path.join(offline_signature_db, DB_FILE))
    assert has_signatures(str(official))
    assert not has_signatures(str(empty)) and not has_signatures(str(tmp_path / "absent"))
    (empty / "freshclam.dat").write_bytes(b"x")   # freshclam's state, not signatures
    assert not has_signatures(str(empty))


def test_the_offline_database_only_when_nothing_else_has_signatures(tmp_path, monkeypatch):
    monkeypatch.setattr(signatures, "SYSTEM_DATABASE", str(tmp_path))   # empty
    assert needs_offline_database(None, None) and needs_offline_database("", "")
    assert not needs_offline_database("/run/clamav/clamd.ctl", None)
    assert not needs_offline_database(None, "/srv/signatures")
    (tmp_path / "main.cvd").write_bytes(b"x")
    assert not needs_offline_database(None, None)


def test_one_signature_finder():
    """health, the start-up checks, the testing kit and scripts/server all
    ask app/botsvc/media/signatures.py: no other place names the system's database."""
    sources = [*(REPO / "app" / "botsvc").rglob("*.py"), *(REPO / "scripts").iterdir()]
    naming = {str(path.relative_to(REPO)) for path in sources
              if path.is_file() and "/var/lib/clamav" in path.read_text(errors="replace")}
    assert naming == {"app/botsvc/media/signatures.py"}


def test_clamscan_with_the_built_database(offline_signature_db, tmp_path):
    """The database is accepted offline, detects EICAR and passes a clean file."""
    assert os.listdir(offline_signature_db) == [DB_FILE]
    (tmp_path / "eicar.com").write_bytes(eicar_bytes())
    (tmp_path / "clean.txt").write_bytes(CLEAN_TEXT)
    run = [
        subprocess.run(["clamscan", "--no-summary", f"--database={offline_signature_db}",
                        str(tmp_path / name)],
                       capture_output=True, text=True, timeout=120)
        for name in ("eicar.com", "clean.txt")
    ]
    assert run[0].returncode == 1 and "Eicar-Test-Signature.UNOFFICIAL FOUND" in run[0].stdout
    assert run[1].returncode == 0 and run[1].stdout.strip().endswith("OK")


def test_eicar_upload_is_infected(reject):
    err = reject(eicar_bytes() + b"\n", "eicar.txt", "infected")
    assert err.description == "The virus scanner rejected the file (Eicar-Test-Signature.UNOFFICIAL)"


def test_the_normalized_output_is_scanned_too(reject, offline_signature_db, tmp_path):
    # The signature is anchored at offset 0, so a BOM in front hides EICAR in
    # the original; the output, BOM removed, is caught by the second scan.
    original = b"\xef\xbb\xbf" + eicar_bytes() + b"\n"
    (tmp_path / "orig.txt").write_bytes(original)
    direct = subprocess.run(["clamscan", "--no-summary", f"--database={offline_signature_db}",
                             str(tmp_path / "orig.txt")],
                            capture_output=True, timeout=120)
    assert direct.returncode == 0
    reject(original, "hidden.txt", "infected")


def test_missing_clamscan_fails_closed(config, unavailable, tmp_path, monkeypatch):
    unavailable(CLEAN_TEXT, "a.txt", "clamav", cfg=dataclasses.replace(config, clamscan="/nonexistent/clamscan"))
    empty = tmp_path / "emptybin"
    empty.mkdir()
    monkeypatch.setenv("PATH", str(empty))
    unavailable(CLEAN_TEXT, "a.txt", "clamav")


def test_missing_database_fails_closed(config, unavailable, tmp_path):
    nodb = tmp_path / "nodb"
    nodb.mkdir()
    err = unavailable(CLEAN_TEXT, "a.txt", "clamav", cfg=dataclasses.replace(config, clamav_db=str(nodb)))
    assert str(nodb) not in err.description


def test_clamscan_timeout_fails_closed(config, unavailable):
    unavailable(CLEAN_TEXT, "a.txt", "clamav", cfg=dataclasses.replace(config, scan_timeout=0.001))


@pytest.fixture
def clamd_config(config, clamd):
    return dataclasses.replace(config, clamd_socket=clamd, clamscan="/nonexistent/clamscan")


def test_clamd_clean_and_infected(upload, reject, clamd_config):
    result = upload(CLEAN_TEXT, "a.txt", cfg=clamd_config)
    assert result.kind == "document"
    err = reject(eicar_bytes(), "e.txt", "infected", cfg=clamd_config)
    assert "Eicar-Test-Signature" in err.description
    check_dependencies(clamd_config)  # PING answered


def test_clamd_stream_limit_is_never_clean(reject, clamd_config):
    big = (b"a fairly ordinary log line, repeated\n" * 60_000)  # 2.2 MB > StreamMaxLength 1M
    reject(big, "big.log", "scan_limit_exceeded", cfg=clamd_config)


def test_clamd_unreachable_fails_closed(unavailable, config, tmp_path):
    cfg = dataclasses.replace(config, clamd_socket=str(tmp_path / "no.sock"))
    unavailable(CLEAN_TEXT, "a.txt", "clamav", cfg=cfg)


class FakeClamd:
    """A unix socket that accepts and then answers ``reply`` (or nothing)."""

    def __init__(self, path, reply: bytes | None):
        self.sock = socket.socket(socket.AF_UNIX)
        self.sock.bind(path)
        self.sock.listen(5)
        self.sock.settimeout(0.1)
        self.reply = reply
        self.held = []
        self.stop = threading.Event()
        self.thread = threading.Thread(target=self._serve, daemon=True)
        self.thread.start()

    def _serve(self):
        while not self.stop.is_set():
            try:
                conn, _ = self.sock.accept()
            except OSError:
                continue
            self.held.append(conn)
            if self.reply is not None:
                conn.settimeout(5)
                conn.recv(65536)
                conn.sendall(self.reply)
                conn.close()

    def close(self):
        self.stop.set()
        self.thread.join()
        self.sock.close()
        for conn in self.held:
            conn.close()


@pytest.mark.parametrize("reply", [None, b"stream: Can't allocate memory ERROR\0", b""])
def test_clamd_silent_or_failing_fails_closed(unavailable, config, tmp_path, reply):
    path = str(tmp_path / "fake.sock")
    fake = FakeClamd(path, reply)
    try:
        cfg = dataclasses.replace(config, clamd_socket=path, scan_timeout=0.5)
        unavailable(CLEAN_TEXT, "a.txt", "clamav", cfg=cfg)
    finally:
        fake.close()
