"""scripts/bench: throughput and latency of botsvc beside baselines measured in
the same run. Each part is a function registered in PARTS; ``scripts/bench``
runs them all, ``scripts/bench api`` one of them.

This module is the top of scripts/: it imports the parts (``bench_*.py``),
and they import only what sits below them (``measure.py`` for the
measuring, ``bench_baseline.py``, the shared process helpers of
``devkit``), never this module back.
"""
from __future__ import annotations

import argparse
import os
import subprocess
import sys
import tempfile
from pathlib import Path

from botsvc.devkit.paths import REPO
from botsvc.devkit.servers import running_server
from scripts import (
    bench_broadcast,
    bench_ci,
    bench_frontdoor,
    bench_percall,
    bench_sandbox,
    bench_scale,
    bench_tools,
    bench_upload,
    bench_webhook,
)
from scripts.measure import NO_LIMITS, alternate, line, median, wrk_cpu, wrk_post

PARTS: dict = {}


def part(name: str):
    def register(fn):
        PARTS[name] = fn
        return fn
    return register


def _send_target(server) -> tuple[str, str, dict]:
    """(url, body, headers) of a sendMessage call of a new bot on ``server``."""
    created = server.operator("createBot", username="bench_bot")
    user = server.operator("createUser")["user_id"]
    chat = server.operator("userStart", user_id=user, bot_id=created["bot"]["id"])["chat_id"]
    body = f'{{"chat_id":"{chat}","text":"benchmark message"}}'
    return (f"{server.base_url}/v2/sendMessage", body,
            {"Authorization": f"Bearer {created['token']}"})


@part("api")
def api_part(tmp: Path, rounds: int = 9, seconds: int = 3) -> None:
    """sendMessage under concurrent load beside a bare JSON endpoint, beside
    the same service with its metrics off (BOTSVC_METRICS=0), with its call
    log off (BOTSVC_CALL_LOG=0), and beside the starting main's sendMessage
    (scripts/bench_percall.py's baseline tree, served by its own
    scripts/server)."""

    bare_argv = [sys.executable, "-m", "gunicorn", "-c", "python:botsvc.gunicorn_conf",
                 "--chdir", str(REPO / "scripts"), "bench_bare:app"]
    for name in ("bare", "svc", "plain", "unlogged", "baseline"):
        (tmp / name).mkdir()
    with running_server(tmp / "bare", argv=bare_argv, **NO_LIMITS) as bare, \
            running_server(tmp / "svc", **NO_LIMITS) as server, \
            running_server(tmp / "plain", BOTSVC_METRICS=0, **NO_LIMITS) as plain, \
            running_server(tmp / "unlogged", BOTSVC_CALL_LOG=0, **NO_LIMITS) as unlogged, \
            running_server(tmp / "baseline", argv=bench_percall.baseline_server_argv(), **NO_LIMITS) as base:
        bare_url = f"{bare.base_url}/bare"
        servers = {"sendMessage": server, "sendMessage, metrics off": plain,
                   "sendMessage, call log off": unlogged, "sendMessage, starting main": base}
        targets = {label: _send_target(served) for label, served in servers.items()}
        wrk_post(bare_url, "{}", {}, seconds=2)   # warm-up of each
        for url, data, headers in targets.values():
            wrk_post(url, data, headers, seconds=2)
        bares: list[dict] = []
        measured: dict[str, list[dict]] = {label: [] for label in targets}
        for turn in range(rounds):   # in turns, so other load weighs on all alike
            bares.append(wrk_cpu(bare, bare_url, "{}", {}, seconds=seconds))
            order = list(targets) if turn % 2 == 0 else list(targets)[::-1]   # none always first
            for label in order:
                url, data, headers = targets[label]
                measured[label].append(wrk_cpu(servers[label], url, data, headers, seconds))
    print(f"api: 2 gunicorn workers x 4 threads; wrk, 8 connections; {rounds} alternating "
          f"rounds of {seconds} s")
    for turn, bare_m in enumerate(bares):
        print(line("bare JSON endpoint", bare_m))
        for label, results in measured.items():
            print(line(label, results[turn]))
    sends, bases = measured["sendMessage"], measured["sendMessage, starting main"]
    ratio = median([t["rps"] / b["rps"] for b, t in zip(bares, sends, strict=True)])
    print(f"  sendMessage / bare (median of rounds) = {ratio:.2f} of the requests per second "
          f"(aim: 0.60 or more)")
    cpu_ratio = median([b["cpu_us"] / t["cpu_us"] for b, t in zip(bares, sends, strict=True)])
    print(f"  bare / sendMessage server CPU per request (median of rounds) = {cpu_ratio:.2f} "
          f"(the requests per second ratio on a machine where the server has the CPUs to "
          f"itself; sendMessage {median([t['cpu_us'] for t in sends]):.0f} us, bare "
          f"{median([b['cpu_us'] for b in bares]):.0f} us)")
    before = median([b["rps"] / t["rps"] for b, t in zip(bases, bares, strict=True)])
    print(f"  starting main's sendMessage / bare (median of rounds) = {before:.2f} of the "
          f"requests per second")
    cpu_now = median([t["cpu_us"] / b["cpu_us"] for b, t in zip(bases, sends, strict=True)])
    print(f"  sendMessage server CPU per request, this tree / starting main (median of "
          f"rounds) = {cpu_now:.2f}")
    for label, what in (("sendMessage, metrics off", "metrics"),
                        ("sendMessage, call log off", "the call log")):
        cost = median([t["rps"] / b["rps"] for b, t in zip(measured[label], sends, strict=True)])
        cpu = median([t["cpu_us"] / b["cpu_us"]
                      for b, t in zip(measured[label], sends, strict=True)])
        print(f"  sendMessage with {what} / without (median of rounds) = {cost:.3f} "
              f"of the requests per second (aim: 0.95 or more), {cpu:.3f} times the "
              f"server's CPU time per call")
    counting = _counting_seconds(tmp / "counting")
    served = median([1 / m["rps"] for m in measured["sendMessage, metrics off"]])
    print(f"  counting one call (multiprocess files) takes {counting * 1e6:.1f} us = "
          f"{counting / served:.4f} of 1/throughput of sendMessage with metrics off")


@part("lone")
def lone_part(tmp: Path, rounds: int = 8, seconds: int = 2) -> None:
    """A lone caller's latency: sendMessage at one connection (wrk -c1), the
    service with its call log beside the same with BOTSVC_CALL_LOG=0, in
    alternating rounds (ABBA); the ratio of the p50s (aim: 1.10 or less)."""
    for name in ("logged", "unlogged"):
        (tmp / name).mkdir()
    with running_server(tmp / "logged", **NO_LIMITS) as logged, \
            running_server(tmp / "unlogged", BOTSVC_CALL_LOG=0, **NO_LIMITS) as unlogged:
        servers = {"call log on": logged, "call log off": unlogged}
        targets = {label: _send_target(served) for label, served in servers.items()}
        for target in targets.values():
            wrk_post(*target, seconds=1, connections=1)   # warm-up
        measured: dict[str, list[dict]] = {label: [] for label in targets}
        for turn in range(rounds):
            for label in (list(targets) if turn % 2 == 0 else list(targets)[::-1]):
                measured[label].append(wrk_post(*targets[label], seconds=seconds,
                                                connections=1))
    print(f"lone: sendMessage at one connection (wrk -c1); {rounds} alternating rounds of "
          f"{seconds} s")
    for label, results in measured.items():
        print(f"  {label:<14} p50 " + " ".join(f"{m['p50']:.3f}" for m in results) + " ms")
    ratios = [a["p50"] / b["p50"] for a, b in zip(measured["call log on"],
                                                  measured["call log off"], strict=True)]
    print(f"  p50 with the call log / without (median of rounds) = {median(ratios):.3f} "
          f"(rounds {min(ratios):.2f}-{max(ratios):.2f}; aim 1.10 or less)")


def _counting_seconds(directory: Path, calls: int = 20000) -> float:
    """What the dispatcher's counting costs per call, in a process of its own
    counting into prometheus_client's multiprocess files as a worker does."""
    directory.mkdir()
    code = ("import time; from botsvc import metrics; metrics.activate(); "
            f"n = {calls}; started = time.perf_counter()\n"
            "for _ in range(n): metrics.api_request('sendMessage', 'ok', 0.004)\n"
            "print((time.perf_counter() - started) / n)")
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True,
                         check=True, cwd=REPO,
                         env={**os.environ, "PROMETHEUS_MULTIPROC_DIR": str(directory)})
    return float(out.stdout.strip())


@part("broadcast")
def broadcast_part(tmp: Path) -> None:
    """A 10,000-member broadcast beside 10,000 sendMessage calls by a client."""
    bench_broadcast.run(tmp)


@part("webhook")
def webhook_part(tmp: Path) -> None:
    """Deliveries per second for one bot and for eight together, beside the
    baseline tree's (scripts/bench_webhook.py)."""
    bench_webhook.run(tmp)


@part("tools")
def tools_part(tmp: Path) -> None:
    """reset, a retry brought forward by advanceClock, and the faults flag."""
    bench_tools.run(tmp)


@part("percall")
def percall_part(tmp: Path) -> None:
    """sendMessage and getMe per call in process, beside the baseline tree
    (``--instructions``: counted by callgrind instead of timed)."""
    if OPTIONS.get("instructions"):
        bench_percall.instructions(tmp)
    else:
        bench_percall.run(tmp)


@part("scale")
def scale_part(tmp: Path) -> None:
    """Calls at three sizes of history (``--sizes``, default 1e4,1e6)."""
    bench_scale.run(tmp, OPTIONS.get("sizes"))


@part("upload")
def upload_part(tmp: Path, rounds: int = 3) -> None:
    """uploadFile of a photo, a 30 s 1080p video and a 3 min song beside the
    same tool work run directly."""
    (tmp / "svc").mkdir()
    with running_server(tmp / "svc", **NO_LIMITS) as server:
        bench_upload.run(tmp, server, rounds, alternate, median)


@part("ci")
def ci_part(tmp: Path) -> None:
    """A bot's CI suite on the pytest plugin (a fresh venv from the wheel)
    beside the same suite on telegram-test-api: fixed and per-test costs."""
    bench_ci.run(tmp)


# Options of the parts that take some (``scripts/bench scale --sizes 1e4,1e6``).
OPTIONS: dict = {}


@part("frontdoor")
def frontdoor_part(tmp: Path) -> None:
    """Heads without end (worker CPU and memory) and a slow-client flood,
    straight at gunicorn and through nginx."""
    bench_frontdoor.run(tmp)


@part("sandbox")
def sandbox_part(tmp: Path) -> None:
    """The sandbox's chat of 10,000 messages beside one of 10: opening it in
    Chromium, and the bytes of its polls."""
    bench_sandbox.run(tmp)


def main(argv: list[str]) -> None:
    parser = argparse.ArgumentParser(prog="scripts/bench")
    parser.add_argument("parts", nargs="*", help=f"of: {', '.join(PARTS)} (default: all)")
    parser.add_argument("--instructions", action="store_true",
                        help="percall: count instructions under callgrind")
    parser.add_argument("--sizes", help="scale: sizes in messages, e.g. 1e4,1e6,1e7")
    options = parser.parse_args(argv)
    OPTIONS.update({k: v for k, v in vars(options).items() if k != "parts"})
    chosen = options.parts or list(PARTS)
    unknown = [name for name in chosen if name not in PARTS]
    if unknown:
        raise SystemExit(f"unknown part(s) {unknown}; parts: {', '.join(PARTS)}")
    for name in chosen:
        with tempfile.TemporaryDirectory(prefix=f"bench-{name}-") as tmp:
            PARTS[name](Path(tmp))


if __name__ == "__main__":
    main(sys.argv[1:])
