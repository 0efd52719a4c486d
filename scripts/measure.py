"""What the benchmarks measure with: wrk under load, a server's CPU time,
medians and percentiles, rounds taken in turns, and the lines they print.
Every part of scripts/bench uses these; none of them starts anything."""
from __future__ import annotations

import os
import re
import shutil
import subprocess
import tempfile

from botsvc.devkit.slow_clients import percentile

NO_LIMITS = dict(BOTSVC_RATE_API_PER_SEC=0, BOTSVC_RATE_SENDS_PER_SEC=0,
                 BOTSVC_RATE_UPLOADS_PER_MIN=0, BOTSVC_RATE_BROADCASTS_PER_MIN=0)


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


def latency_line(label: str, seconds: list[float]) -> str:
    return (f"  {label:<44} p50 {percentile(seconds, 0.5) * 1000:>7.2f} ms   "
            f"p99 {percentile(seconds, 0.99) * 1000:>7.2f} ms")
