"""Fixtures for the webhook tests: local receivers (real HTTPS and HTTP
servers on 127.0.0.1, tests/webhooks/support.py) with certificates from a
trustme test CA, substituted resolvers and clock, and the delivery job driven
by hand. Nothing else is ever contacted: every name reaches an address
through a substituted resolver."""
from __future__ import annotations

import socket
import ssl
import threading
import time

import pytest
import trustme
import urllib3.util.connection

from botsvc.devkit.receivers import Receiver, answer
from botsvc.jobs import DELIVER_WEBHOOKS, run_job
from botsvc.webhooks import delivery
from tests.webhooks.support import HOST, SECRET

HOOK_HOST = "hooks.example.test"


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
    """make_receiver(respond=..., cert_for=HOOK_HOST, tls=True, host="127.0.0.1",
    port=0) -> Receiver."""
    made: list[Receiver] = []

    def factory(respond=None, *, cert_for: str = HOOK_HOST, tls: bool = True,
                host: str = "127.0.0.1", port: int = 0) -> Receiver:
        context = None
        if tls:
            context = ssl.create_default_context(ssl.Purpose.CLIENT_AUTH)
            ca.issue_cert(cert_for).configure_cert(context)
        receiver = Receiver(context, respond or answer(200), host, port)
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


# -- the delivery worker over a real app -------------------------------------

class FakeClock:
    """The machine's clock under the service clock, moved by hand: retries
    become due (and leases expire) when the test says."""

    def __init__(self, start: float):
        self.now = start

    def __call__(self) -> float:
        return self.now

    def advance(self, seconds: float) -> None:
        self.now += seconds


@pytest.fixture
def clock(monkeypatch):
    fake = FakeClock(time.time())
    monkeypatch.setattr("botsvc.clock.machine_clock", fake)
    return fake


@pytest.fixture
def connections(monkeypatch):
    """Every TCP connection urllib3 opens, as (host, port)."""
    seen: list[tuple[str, int]] = []
    real = urllib3.util.connection.create_connection

    def recording(address, *args, **kwargs):
        seen.append(address)
        return real(address, *args, **kwargs)

    monkeypatch.setattr(urllib3.util.connection, "create_connection", recording)
    return seen


@pytest.fixture
def run_pass(app):
    """One pass of the delivery job, as the scheduler runs it, then wait until
    the deliveries it started (and any they chain) have finished."""
    settings = app.config["SETTINGS"]

    def run() -> None:
        run_job(app, DELIVER_WEBHOOKS)
        assert delivery.deliverer_for(settings).wait_idle(30)

    yield run
    delivery.forget_deliverer(settings)


@pytest.fixture
def local_dns(monkeypatch, fake_resolver):
    """The delivery module's resolver, mapping HOST to 127.0.0.1."""
    resolver = FakeResolver({HOST: ["127.0.0.1"]})
    monkeypatch.setattr(delivery, "resolver", resolver)
    return resolver


@pytest.fixture
def hook(local_dns, make_receiver):
    """hook(bot, respond=None, path="/hook") -> Receiver: a receiver with a
    certificate for HOST, set as the bot's webhook."""
    def install(bot, respond=None, path="/hook"):
        receiver = make_receiver(respond, cert_for=HOST)
        receiver.url = f"https://{HOST}:{receiver.port}{path}"
        assert bot.ok("setWebhook", url=receiver.url, secret_token=SECRET) is True
        return receiver
    return install
