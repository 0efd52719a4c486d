"""Local receivers for the transport tests: real HTTPS (and HTTP) servers on
127.0.0.1 with certificates from a trustme test CA. Nothing else is ever
contacted: every name reaches an address through a substituted resolver."""
from __future__ import annotations

import socket
import ssl
import threading
from collections.abc import Callable
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer

import pytest
import trustme

HOOK_HOST = "hooks.example.test"


class _Server(ThreadingHTTPServer):
    daemon_threads = True
    receiver: Receiver

    def handle_error(self, request, client_address):
        # A client that refuses our certificate, or hangs up at the deadline,
        # is part of what these tests provoke; keep it out of the output.
        self.receiver.errors += 1


class _Handler(BaseHTTPRequestHandler):
    protocol_version = "HTTP/1.1"
    server: _Server

    def do_POST(self):
        length = int(self.headers.get("Content-Length", "0"))
        body = self.rfile.read(length)
        receiver = self.server.receiver
        receiver.requests.append({
            "path": self.path,
            "headers": {k.lower(): v for k, v in self.headers.items()},
            "body": body,
        })
        receiver.respond(self)

    def log_message(self, *args):
        pass


def answer(status: int, *, headers: dict[str, str] | None = None, body: bytes = b"ok"):
    def respond(handler: _Handler) -> None:
        handler.send_response(status)
        for name, value in (headers or {}).items():
            handler.send_header(name, value)
        handler.send_header("Content-Length", str(len(body)))
        handler.end_headers()
        handler.wfile.write(body)
    return respond


class Receiver:
    def __init__(self, ssl_context: ssl.SSLContext | None, respond: Callable[[_Handler], None]):
        self.requests: list[dict] = []
        self.sni: list[str | None] = []
        self.errors = 0
        self.respond = respond
        self.release = threading.Event()   # lets hanging handlers finish at teardown
        self.server = _Server(("127.0.0.1", 0), _Handler)
        self.server.receiver = self
        if ssl_context is not None:
            ssl_context.sni_callback = lambda sock, name, ctx: self.sni.append(name)
            # Handshake in the handler thread, not in the accept loop.
            self.server.socket = ssl_context.wrap_socket(
                self.server.socket, server_side=True, do_handshake_on_connect=False)
        self.port = self.server.server_address[1]
        self._thread = threading.Thread(target=self.server.serve_forever, args=(0.05,), daemon=True)
        self._thread.start()

    def close(self) -> None:
        self.release.set()
        self.server.shutdown()
        self.server.server_close()


@pytest.fixture(scope="session")
def ca():
    return trustme.CA()


@pytest.fixture
def ca_file(ca, tmp_path):
    path = tmp_path / "test-ca.pem"
    ca.cert_pem.write_to_path(str(path))
    return str(path)


@pytest.fixture
def make_receiver(ca):
    """make_receiver(respond=..., cert_for=HOOK_HOST, tls=True) -> Receiver."""
    made: list[Receiver] = []

    def factory(respond=None, *, cert_for: str = HOOK_HOST, tls: bool = True) -> Receiver:
        context = None
        if tls:
            context = ssl.create_default_context(ssl.Purpose.CLIENT_AUTH)
            ca.issue_cert(cert_for).configure_cert(context)
        receiver = Receiver(context, respond or answer(200))
        made.append(receiver)
        return receiver

    yield factory
    for receiver in made:
        receiver.close()


@pytest.fixture
def silent_listener():
    """A TCP port that accepts connections and never says a byte (not even
    a TLS handshake). Yields the port."""
    listener = socket.socket()
    listener.bind(("127.0.0.1", 0))
    listener.listen(8)
    held: list[socket.socket] = []
    stop = threading.Event()

    def accept_loop():
        listener.settimeout(0.1)
        while not stop.is_set():
            try:
                held.append(listener.accept()[0])
            except OSError:
                continue

    thread = threading.Thread(target=accept_loop, daemon=True)
    thread.start()
    yield listener.getsockname()[1]
    stop.set()
    thread.join()
    for conn in held:
        conn.close()
    listener.close()


@pytest.fixture
def dead_port():
    """A loopback port nothing listens on."""
    probe = socket.socket()
    probe.bind(("127.0.0.1", 0))
    port = probe.getsockname()[1]
    probe.close()
    return port


class FakeResolver:
    """Answers from a table, or from a list of tables on successive calls
    (to model DNS rebinding), and records every question."""

    def __init__(self, *answers: dict[str, list[str]]):
        self._answers = list(answers)
        self.calls: list[tuple[str, int]] = []

    def __call__(self, host: str, port: int) -> list[str]:
        self.calls.append((host, port))
        table = self._answers[min(len(self.calls), len(self._answers)) - 1]
        if host not in table:
            raise socket.gaierror(socket.EAI_NONAME, "Name or service not known")
        return list(table[host])


@pytest.fixture
def fake_resolver():
    """The FakeResolver class, as a fixture so test modules need no imports
    from conftest."""
    return FakeResolver


@pytest.fixture(name="answer")
def answer_fixture():
    return answer
