"""scripts/bench: throughput and latency of botsvc beside baselines measured in
the same run. Each part is a function registered in PARTS; ``scripts/bench``
runs them all, ``scripts/bench api`` one of them."""
from __future__ import annotations

import os
import re
import shutil
import subprocess
import sys
import tempfile
from pathlib import Path

from tests.support.paths import REPO
from tests.support.servers import running_server

PARTS: dict = {}
NO_LIMITS = dict(BOTSVC_RATE_API_PER_SEC=0, BOTSVC_RATE_SENDS_PER_SEC=0,
                 BOTSVC_RATE_UPLOADS_PER_MIN=0, BOTSVC_RATE_BROADCASTS_PER_MIN=0)


def part(name: str):
    def register(fn):
        PARTS[name] = fn
        return fn
    return register


def wrk_post(url: str, body: str, headers: dict, seconds: int = 10,
             connections: int = 8) -> dict:
    """requests/s, p50 and p99 (ms) of a POST under load, measured by wrk."""
    if shutil.which("wrk") is None:
        raise SystemExit("wrk is missing: apt-get install wrk")
    with tempfile.NamedTemporaryFile("w", suffix=".lua", delete=False) as script:
        lines = ['wrk.method = "POST"', f"wrk.body = [[{body}]]",
                 'wrk.headers["Content-Type"] = "application/json"']
        lines += [f'wrk.headers["{k}"] = "{v}"' for k, v in headers.items()]
        script.write("\n".join(lines) + "\n")
    try:
        out = subprocess.run(["wrk", "-t1", f"-c{connections}", f"-d{seconds}s", "--latency",
                              "-s", script.name, url], capture_output=True, text=True,
                             check=True).stdout
    finally:
        os.unlink(script.name)
    errors = re.search(r"Non-2xx or 3xx responses: (\d+)", out)
    return {"requests": int(re.search(r"(\d+) requests in", out).group(1)),
            "rps": float(re.search(r"Requests/sec:\s+([\d.]+)", out).group(1)),
            "p50": _ms(re.search(r"50%\s+([\d.]+\w+)", out).group(1)),
            "p99": _ms(re.search(r"99%\s+([\d.]+\w+)", out).group(1)),
            "non_2xx": int(errors.group(1)) if errors else 0}


def group_cpu_seconds(pgid: int) -> float:
    """User+sys CPU seconds of every live process of a process group (a server:
    master and workers), from /proc."""
    ticks = os.sysconf("SC_CLK_TCK")
    total = 0
    for entry in os.listdir("/proc"):
        if not entry.isdigit():
            continue
        try:
            with open(f"/proc/{entry}/stat") as stat:
                fields = stat.read().rsplit(")", 1)[1].split()
        except OSError:
            continue
        if int(fields[2]) == pgid:   # pgrp; utime and stime follow at 11 and 12
            total += int(fields[11]) + int(fields[12])
    return total / ticks


def wrk_cpu(server, url: str, body: str, headers: dict, seconds: int) -> dict:
    """``wrk_post``, with the server's CPU time per request beside it."""
    before = group_cpu_seconds(server.process.pid)
    measured = wrk_post(url, body, headers, seconds=seconds)
    spent = group_cpu_seconds(server.process.pid) - before
    return {**measured, "cpu_us": spent / max(1, measured["requests"]) * 1e6}


def _ms(text: str) -> float:
    value, unit = re.match(r"([\d.]+)(\w+)", text).groups()
    return float(value) * {"us": 0.001, "ms": 1.0, "s": 1000.0, "m": 60000.0}[unit]


def line(label: str, m: dict) -> str:
    cpu = f"   server CPU {m['cpu_us']:>6.0f} us/req" if "cpu_us" in m else ""
    return (f"  {label:<28} {m['rps']:>9.0f} req/s   p50 {m['p50']:>7.2f} ms   "
            f"p99 {m['p99']:>7.2f} ms   non-2xx {m['non_2xx']}{cpu}")


def median(values: list[float]) -> float:
    ordered = sorted(values)
    return ordered[len(ordered) // 2]


def alternate(rounds: int, measure_baseline, measure_target) -> tuple[list, list]:
    """Baseline and target measured in turns, so load from anything else on the
    machine weighs on both alike; the ratio is taken per round."""
    baselines, targets = [], []
    for _ in range(rounds):
        baselines.append(measure_baseline())
        targets.append(measure_target())
    return baselines, targets


def _send_target(server) -> tuple[str, str, dict]:
    """(url, body, headers) of a sendMessage call of a new bot on ``server``."""
    created = server.operator("createBot", username="bench_bot")
    user = server.operator("createUser")["user_id"]
    chat = server.operator("userStart", user_id=user, bot_id=created["bot"]["id"])["chat_id"]
    body = f'{{"chat_id":"{chat}","text":"benchmark message"}}'
    return (f"{server.base_url}/v2/sendMessage", body,
            {"Authorization": f"Bearer {created['token']}"})


@part("api")
def bench_api(tmp: Path, rounds: int = 9, seconds: int = 3) -> None:
    """sendMessage under concurrent load beside a bare JSON endpoint, beside
    the same service with its metrics off (BOTSVC_METRICS=0), with its call
    log off (BOTSVC_CALL_LOG=0), and beside the starting main's sendMessage
    (scripts/bench_percall.py's baseline tree, served by its own
    scripts/server)."""
    from scripts.bench_percall import baseline_server_argv

    bare_argv = [sys.executable, "-m", "gunicorn", "-c", "python:botsvc.gunicorn_conf",
                 "--chdir", str(REPO / "scripts"), "bench_bare:app"]
    for name in ("bare", "svc", "plain", "unlogged", "baseline"):
        (tmp / name).mkdir()
    with running_server(tmp / "bare", argv=bare_argv, **NO_LIMITS) as bare, \
            running_server(tmp / "svc", **NO_LIMITS) as server, \
            running_server(tmp / "plain", BOTSVC_METRICS=0, **NO_LIMITS) as plain, \
            running_server(tmp / "unlogged", BOTSVC_CALL_LOG=0, **NO_LIMITS) as unlogged, \
            running_server(tmp / "baseline", argv=baseline_server_argv(), **NO_LIMITS) as base:
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


def _counting_seconds(directory: Path, calls: int = 20000) -> float:
    """What the dispatcher's counting costs per call, in a process of its own
    counting into prometheus_client's multiprocess files as a worker does."""
    directory.mkdir()
    code = ("import time; from app import metrics; metrics.activate(); "
            f"n = {calls}; started = time.perf_counter()\n"
            "for _ in range(n): metrics.api_request('sendMessage', 'ok', 0.004)\n"
            "print((time.perf_counter() - started) / n)")
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True,
                         check=True, cwd=REPO,
                         env={**os.environ, "PROMETHEUS_MULTIPROC_DIR": str(directory)})
    return float(out.stdout.strip())


@part("broadcast")
def bench_broadcast(tmp: Path) -> None:
    """A 10,000-member broadcast beside 10,000 sendMessage calls by a client."""
    from scripts import bench_broadcast as broadcast_part

    broadcast_part.run(tmp)


def percentile(values: list[float], fraction: float) -> float:
    ordered = sorted(values)
    return ordered[min(len(ordered) - 1, int(fraction * len(ordered)))]


def latency_line(label: str, seconds: list[float]) -> str:
    return (f"  {label:<44} p50 {percentile(seconds, 0.5) * 1000:>7.2f} ms   "
            f"p99 {percentile(seconds, 0.99) * 1000:>7.2f} ms")


@part("webhook")
def bench_webhook(tmp: Path) -> None:
    """Deliveries per second for one bot and for eight together, beside the
    baseline tree's (scripts/bench_webhook.py)."""
    from scripts import bench_webhook as webhook_part

    webhook_part.run(tmp)


@part("tools")
def bench_tools(tmp: Path) -> None:
    """reset, a retry brought forward by advanceClock, and the faults flag."""
    from scripts import bench_tools as tools_part

    tools_part.run(tmp)


@part("percall")
def bench_percall(tmp: Path) -> None:
    """sendMessage and getMe per call in process, beside the baseline tree
    (``--instructions``: counted by callgrind instead of timed)."""
    from scripts import bench_percall as percall_part

    if OPTIONS.get("instructions"):
        percall_part.instructions(tmp)
    else:
        percall_part.run(tmp)


@part("scale")
def bench_scale(tmp: Path) -> None:
    """Calls at three sizes of history (``--sizes``, default 1e4,1e6)."""
    from scripts import bench_scale as scale_part

    scale_part.run(tmp, OPTIONS.get("sizes"))


@part("upload")
def bench_upload(tmp: Path, rounds: int = 3) -> None:
    """uploadFile of a photo, a 30 s 1080p video and a 3 min song beside the
    same tool work run directly."""
    from scripts import bench_upload as upload_part

    (tmp / "svc").mkdir()
    with running_server(tmp / "svc", **NO_LIMITS) as server:
        upload_part.run(tmp, server, rounds, alternate, median)


# Options of the parts that take some (``scripts/bench scale --sizes 1e4,1e6``).
OPTIONS: dict = {}


@part("frontdoor")
def bench_frontdoor(tmp: Path) -> None:
    """Heads without end (worker CPU and memory) and a slow-client flood,
    straight at gunicorn and through nginx."""
    from scripts import bench_frontdoor as frontdoor_part

    frontdoor_part.run(tmp)


@part("sandbox")
def bench_sandbox(tmp: Path) -> None:
    """The sandbox's chat of 10,000 messages beside one of 10: opening it in
    Chromium, and the bytes of its polls."""
    from scripts import bench_sandbox as sandbox_part

    sandbox_part.run(tmp)


def main(argv: list[str]) -> None:
    import argparse

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
