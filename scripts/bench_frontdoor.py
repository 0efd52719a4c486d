"""The front door benchmark (a part of scripts/bench, not a test).

1. What a request head without end costs the worker that reads it: a request
   line and a header block of 16 and 64 MiB sent as fast as the worker takes
   them, its CPU seconds (from /proc) and resident memory before and after,
   beside what 1000 getMe cost the same worker in the same run.
2. 32 slow clients (a byte a second, connecting again whenever they are cut;
   tests/slow_clients.py) and, meanwhile, 200 getMe of another client, each
   given 5 s: straight at gunicorn and through nginx rendered from the
   template scripts/install-service installs; beside the same 200 getMe with
   no flood, in the same run.
"""
from __future__ import annotations

import contextlib
import socket
import time
from pathlib import Path

import requests

from botsvc.devkit.frontdoor_process import running_frontdoor
from botsvc.devkit.owners import children, cpu_seconds, resident_bytes
from botsvc.devkit.servers import running_server
from botsvc.devkit.slow_clients import percentile, slow_client_flood, timed_get_me

MiB = 1024 * 1024
HEADS = {
    "request line": (b"GET /", b"a" * 65536),
    "header block": (b"GET /healthz HTTP/1.1\r\n", b"X-A: b\r\n" * 8192),
}


def _send_head(port: int, first: bytes, repeated: bytes, size: int) -> str:
    """Send ``first`` then ``repeated`` up to ``size`` bytes while the server
    takes them; its answer's status line."""
    with socket.create_connection(("127.0.0.1", port), timeout=600) as sock:
        with contextlib.suppress(OSError):
            sock.sendall(first)
            for _ in range(size // len(repeated)):
                sock.sendall(repeated)
        answer = b""
        with contextlib.suppress(OSError):
            answer = sock.recv(200)
    return answer.split(b"\r\n")[0].decode(errors="replace") or "(closed without an answer)"


def head_costs(tmp: Path) -> None:
    with running_server(tmp / "heads", BOTSVC_WORKERS="1") as server:
        [worker] = children(server.process.pid)
        token = server.operator("createBot", username="heads_bot")["token"]
        with requests.Session() as session:
            before = cpu_seconds(worker)
            for _ in range(1000):
                session.post(f"{server.base_url}/v2/getMe", json={}, timeout=30,
                             headers={"Authorization": f"Bearer {token}"})
            per_call = (cpu_seconds(worker) - before) / 1000
        print("heads: 1 gunicorn worker; CPU of the worker from /proc")
        print(f"  baseline: one getMe costs the worker {per_call * 1000:.2f} ms of CPU")
        for name, (first, repeated) in HEADS.items():
            for size in (16 * MiB, 64 * MiB):
                cpu, memory = cpu_seconds(worker), resident_bytes(worker)
                status = _send_head(server.port, first, repeated, size)
                time.sleep(0.5)
                spent = cpu_seconds(worker) - cpu
                grown = (resident_bytes(worker) - memory) / MiB
                print(f"  {name} of {size // MiB} MiB: {status!r}; worker CPU {spent:.2f} s "
                      f"(= {spent / per_call:.0f} getMe), resident memory {grown:+.1f} MiB")


def _flood_line(label: str, took: list) -> str:
    answered = [t for t in took if t is not None]
    failed = len(took) - len(answered)
    if not answered:
        return f"  {label:<34} {failed} of {len(took)} failed (no answer within 5 s)"
    return (f"  {label:<34} {failed:>3} of {len(took)} failed ({100 * failed / len(took):.0f}%)"
            f"   p50 {percentile(answered, 0.5) * 1000:7.1f} ms   "
            f"p99 {percentile(answered, 0.99) * 1000:7.1f} ms")


def flood(tmp: Path) -> None:
    with running_server(tmp / "svc") as server, running_frontdoor(tmp / "nginx", server) as door:
        token = server.operator("createBot", username="flood_bot")["token"]
        quiet = timed_get_me(server.base_url, token)
        with slow_client_flood(server.port, clients=32) as direct_flood:
            direct = timed_get_me(server.base_url, token)
            direct_cuts = direct_flood.cuts
        quiet_door = timed_get_me(door.base_url, token)
        with slow_client_flood(door.port, clients=32) as door_flood:
            proxied = timed_get_me(door.base_url, token)
            door_cuts = door_flood.cuts
    print("flood: 2 gunicorn workers x 4 threads; 200 getMe one session, one every 0.1 s, "
          "5 s each")
    print(_flood_line("straight at gunicorn, no flood", quiet))
    print(_flood_line("straight at gunicorn, 32 slow", direct) + f"   (slow ones cut "
          f"{direct_cuts} times)")
    print(_flood_line("through nginx, no flood", quiet_door))
    print(_flood_line("through nginx, 32 slow", proxied) + f"   (slow ones cut {door_cuts} times)")
    for label, base, measured in (("gunicorn", quiet, direct), ("nginx", quiet_door, proxied)):
        base_ok = [t for t in base if t is not None]
        flood_ok = [t for t in measured if t is not None]
        if base_ok and flood_ok:
            print(f"  {label}: p99 under the flood / p99 without = "
                  f"{percentile(flood_ok, 0.99) / percentile(base_ok, 0.99):.2f}")


def run(tmp: Path) -> None:
    head_costs(tmp)
    flood(tmp)
