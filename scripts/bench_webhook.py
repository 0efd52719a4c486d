"""scripts/bench webhook: deliveries per second to local HTTPS receivers,
this tree beside a baseline tree (``bench_baseline``), in the same sitting.

Both servers run at once (scripts/server's gunicorn: 2 workers x 4 threads,
rate limits off), each with its own receiver (``LeanReceiver``: HTTPS on
loopback, HTTP/1.1 keeping connections open as receivers do, answering 200
with as little work as Python allows, since on two shared cores every
microsecond the receiver spends is taken from the service), and are measured in
turns (ABBA: the side measured first changes every round), so load from
anything else on the machine weighs on both alike. Per round and side:

- one bot: a backlog of ``one_bot`` updates queued while it polls, then one
  setWebhook; deliveries per second from that call to the last arrival;
- ``bots`` bots together: ``per_bot`` updates each, then their setWebhooks;
  the same, over all of them;
- the server workers' CPU time per delivery (user + system, from /proc),
  which the machine's other load disturbs less than the rates;
- the receiver's TCP connections per delivery.

Then the latency of one update, userSendMessage to arrival, in turns.
"""
from __future__ import annotations

import os
import socket
import ssl
import subprocess
import threading
import time
from concurrent.futures import ThreadPoolExecutor
from dataclasses import dataclass, field
from pathlib import Path

import requests
import trustme

from botsvc.devkit.servers import running_server
from botsvc.testkit.server import LocalServer
from scripts.bench_baseline import baseline_argv, baseline_tree, describe
from scripts.measure import NO_LIMITS, median, percentile

SECRET = "bench_secret_token_0123456789"
FILL_THREADS = 4


@dataclass
class Side:
    """One server under test with its receiver and its bots."""
    name: str
    server: LocalServer
    receiver: LeanReceiver
    http: requests.Session = field(default_factory=requests.Session)
    bots: list[tuple[int, str, int]] = field(default_factory=list)   # (id, token, user)
    one: list[float] = field(default_factory=list)
    many: list[float] = field(default_factory=list)
    cpu_one: list[float] = field(default_factory=list)
    cpu_many: list[float] = field(default_factory=list)
    connections: list[float] = field(default_factory=list)
    latencies: list[float] = field(default_factory=list)

    def call(self, token: str, method: str, **params):
        response = self.http.post(f"{self.server.base_url}/v2/{method}", json=params,
                                  headers={"Authorization": f"Bearer {token}"}, timeout=30)
        assert response.status_code == 200, response.text
        return response.json()["result"]

    def add_bots(self, count: int) -> None:
        for n in range(count):
            created = self.server.operator("createBot", username=f"{self.name}{n}_bot")
            bot_id = created["bot"]["id"]
            user = self.server.operator("createUser")["user_id"]
            self.server.operator("userStart", user_id=user, bot_id=bot_id)
            self.call(created["token"], "deleteWebhook", drop_pending_updates=True)
            self.bots.append((bot_id, created["token"], user))

    def fill(self, bots: list[tuple[int, str, int]], per_bot: int) -> None:
        """Queue ``per_bot`` user messages for each bot (which polls meanwhile)."""
        jobs = [(bot_id, user, i) for bot_id, _, user in bots for i in range(per_bot)]

        def send(share):
            session = requests.Session()
            for bot_id, user, i in share:
                answer = session.post(f"{self.server.base_url}/manage/v1/userSendMessage",
                                      json={"user_id": user, "bot_id": bot_id,
                                            "text": f"backlog {i}"},
                                      headers=self.server.admin_headers, timeout=30)
                assert answer.status_code == 200, answer.text
        with ThreadPoolExecutor(FILL_THREADS) as pool:
            list(pool.map(send, [jobs[i::FILL_THREADS] for i in range(FILL_THREADS)]))

    def workers_cpu(self) -> float:
        """CPU seconds (user + system) of the server's worker processes so far."""
        pids = subprocess.run(["pgrep", "-P", str(self.server.process.pid)],
                              capture_output=True, text=True, check=False).stdout.split()
        total = 0.0
        for pid in pids:
            try:
                fields = Path(f"/proc/{pid}/stat").read_text().rsplit(")", 1)[1].split()
            except OSError:
                continue
            total += (int(fields[11]) + int(fields[12])) / _CLOCK_TICKS
        return total

    def deliver(self, bots: list[tuple[int, str, int]], per_bot: int, tag: str
                ) -> tuple[float, float, float]:
        """(deliveries/s, CPU ms per delivery, connections per delivery) of
        ``bots`` draining ``per_bot`` queued updates each."""
        self.call(bots[0][1], "getMe")   # nothing else in flight
        self.fill(bots, per_bot)
        expected = len(self.receiver.requests) + len(bots) * per_bot
        connections = self.receiver.connections
        cpu = self.workers_cpu()
        started = time.perf_counter()
        for bot_id, token, _ in bots:
            self.call(token, "setWebhook", secret_token=SECRET,
                      url=f"https://127.0.0.1:{self.receiver.port}/{tag}/{bot_id}")
        self.receiver.wait_for(expected, 300)
        elapsed = self.receiver.requests[expected - 1]["at"] - started
        time.sleep(0.2)   # let the last records commit before reading the CPU
        spent = self.workers_cpu() - cpu
        for _, token, _ in bots:   # back to polling, queue empty, for the next round
            self.call(token, "deleteWebhook", drop_pending_updates=True)
        count = len(bots) * per_bot
        return (count / elapsed, spent * 1000 / count,
                (self.receiver.connections - connections) / count)

    def one_update(self) -> float:
        """userSendMessage to arrival at the receiver, one update, in seconds."""
        bot_id, _, user = self.bots[0]
        expected = len(self.receiver.requests) + 1
        started = time.perf_counter()
        self.server.operator("userSendMessage", user_id=user, bot_id=bot_id, text="one")
        self.receiver.wait_for(expected, 30)
        return self.receiver.requests[expected - 1]["at"] - started


_CLOCK_TICKS = os.sysconf("SC_CLK_TCK")


class LeanReceiver:
    """An HTTPS receiver that records each request's path and arrival time,
    counts the TCP connections it accepts, and answers 200 with no body."""

    ANSWER = b"HTTP/1.1 200 OK\r\nContent-Length: 0\r\n\r\n"

    def __init__(self, ca: trustme.CA):
        context = ssl.create_default_context(ssl.Purpose.CLIENT_AUTH)
        ca.issue_cert("127.0.0.1").configure_cert(context)
        listener = socket.create_server(("127.0.0.1", 0), backlog=128)
        self.port = listener.getsockname()[1]
        self._listener = context.wrap_socket(listener, server_side=True,
                                             do_handshake_on_connect=False)
        self.requests: list[dict] = []
        self.connections = 0
        self._open: list[socket.socket] = []
        self._arrived = threading.Condition()
        self._awaited = 0
        threading.Thread(target=self._accept, daemon=True).start()

    def wait_for(self, count: int, timeout: float) -> None:
        with self._arrived:
            self._awaited = count
            assert self._arrived.wait_for(lambda: len(self.requests) >= count, timeout)

    def close(self) -> None:
        self._listener.close()
        for conn in self._open:
            conn.close()

    def _accept(self) -> None:
        while True:
            try:
                conn, _ = self._listener.accept()
            except OSError:
                return
            conn.setsockopt(socket.IPPROTO_TCP, socket.TCP_NODELAY, 1)
            self.connections += 1
            self._open.append(conn)
            threading.Thread(target=self._serve, args=(conn,), daemon=True).start()

    def _serve(self, conn: ssl.SSLSocket) -> None:
        try:
            conn.do_handshake()
            buffer = b""
            while True:
                while b"\r\n\r\n" not in buffer:
                    data = conn.recv(65536)
                    if not data:
                        return
                    buffer += data
                head, _, rest = buffer.partition(b"\r\n\r\n")
                lines = head.split(b"\r\n")
                length = next((int(line.split(b":", 1)[1]) for line in lines[1:]
                               if line[:15].lower() == b"content-length:"), 0)
                while len(rest) < length:
                    data = conn.recv(65536)
                    if not data:
                        return
                    rest += data
                buffer = rest[length:]
                self.requests.append({"path": lines[0].split(b" ")[1].decode(),
                                      "at": time.perf_counter()})
                conn.sendall(self.ANSWER)
                if len(self.requests) >= self._awaited:
                    with self._arrived:
                        self._arrived.notify_all()
        except OSError:
            return
        finally:
            conn.close()


def run(tmp: Path, rounds: int = 5, one_bot: int = 800, bots: int = 8, per_bot: int = 200,
        messages: int = 200) -> None:

    ca = trustme.CA()
    ca_file = tmp / "ca.pem"
    ca.cert_pem.write_to_path(str(ca_file))
    env = dict(BOTSVC_WEBHOOK_ALLOW_PRIVATE=1, BOTSVC_WEBHOOK_CA_BUNDLE=str(ca_file),
               **NO_LIMITS)
    receivers = [LeanReceiver(ca), LeanReceiver(ca)]
    try:
        with baseline_tree(tmp) as tree, \
                running_server(tmp / "baseline", argv=baseline_argv(tree), **env) as base, \
                running_server(tmp / "target", **env) as target:
            sides = [Side("base", base, receivers[0]), Side("this", target, receivers[1])]
            for side in sides:
                side.add_bots(1 + bots)
                side.deliver(side.bots[:1], 50, "warm")   # imports, TLS contexts, pools
            for turn in range(rounds):
                order = sides if turn % 2 == 0 else sides[::-1]
                for side in order:
                    rate, cpu, conns = side.deliver(side.bots[:1], one_bot, f"one{turn}")
                    side.one.append(rate)
                    side.cpu_one.append(cpu)
                    side.connections.append(conns)
                for side in order[::-1]:
                    rate, cpu, _ = side.deliver(side.bots[1:], per_bot, f"many{turn}")
                    side.many.append(rate)
                    side.cpu_many.append(cpu)
            for side in sides:
                side.call(side.bots[0][1], "setWebhook", secret_token=SECRET,
                          url=f"https://127.0.0.1:{side.receiver.port}/latency")
                side.one_update()
            for turn in range(messages):
                for side in (sides if turn % 2 == 0 else sides[::-1]):
                    side.latencies.append(side.one_update())
    finally:
        for receiver in receivers:
            receiver.close()
    report(sides, rounds, one_bot, bots, per_bot, messages)


def report(sides: list[Side], rounds: int, one_bot: int, bots: int, per_bot: int,
           messages: int) -> None:
    base, this = sides
    print(f"webhook: baseline = {describe()}; this tree beside it, in {rounds} ABBA rounds")
    print("  each: 2 gunicorn workers x 4 threads; a lean HTTPS receiver on loopback; "
          f"one bot: {one_bot} queued; {bots} bots: {per_bot} queued each")
    for turn in range(rounds):
        print(f"  round {turn + 1}: one bot {base.one[turn]:6.0f}/s -> {this.one[turn]:6.0f}/s"
              f"   {bots} bots {base.many[turn]:6.0f}/s -> {this.many[turn]:6.0f}/s")
    one_gain = median([t / b for b, t in zip(base.one, this.one, strict=True)])
    print(f"  one bot, deliveries/s: {median(this.one):.0f} beside the baseline's "
          f"{median(base.one):.0f} = {one_gain:.2f}x (median of rounds; aim: 1.5x or more)")
    scale = median([m / o for o, m in zip(this.one, this.many, strict=True)])
    base_scale = median([m / o for o, m in zip(base.one, base.many, strict=True)])
    print(f"  {bots} bots together / one bot: {scale:.2f}x beside the baseline's "
          f"{base_scale:.2f}x (median of rounds; aim: 3x or more)")
    print(f"  {bots} bots together, deliveries/s: {median(this.many):.0f} beside the "
          f"baseline's {median(base.many):.0f}")
    print(f"  server CPU per delivery (user + system, both workers): one bot "
          f"{median(this.cpu_one):.2f} ms beside {median(base.cpu_one):.2f} ms; "
          f"{bots} bots {median(this.cpu_many):.2f} ms beside {median(base.cpu_many):.2f} ms")
    print(f"  TCP connections per delivery (one bot): {median(this.connections):.4f} "
          f"beside {median(base.connections):.4f}")
    for side, label in ((base, "baseline"), (this, "this tree")):
        print(f"  userSendMessage -> arrival, {label:<9} ({messages} updates)   "
              f"p50 {percentile(side.latencies, 0.5) * 1000:6.2f} ms   "
              f"p99 {percentile(side.latencies, 0.99) * 1000:6.2f} ms")
