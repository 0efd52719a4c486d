"""ClamAV: clamd over its unix socket when configured, clamscan otherwise.

A configured clamd that does not answer is an outage (503), never a reason
to fall back to clamscan silently. "Too big to scan" is never clean: clamscan
runs with ``--alert-exceeds-max``, and clamd's StreamMaxLength answer ("size
limit exceeded") or a ``Heuristics.Limits.Exceeded`` verdict rejects the file
with reason ``scan_limit_exceeded``. Operators running clamd must set
``AlertExceedsMax yes`` and a StreamMaxLength above the upload ceiling.
"""
from __future__ import annotations

import logging
import os
import socket
import struct
import time

from botsvc import metrics
from botsvc.errors import Reason, dependency_unavailable, media_rejected

from .config import MediaConfig
from .runner import run_tool, tool_failed

log = logging.getLogger("botsvc.media")

_CHUNK = 64 * 1024
_LIMIT_PREFIX = "Heuristics.Limits.Exceeded"
# Above any upload (100 MiB) and any converted output (RLIMIT_FSIZE 512 MiB),
# so that ordinary files are scanned whole; the alert covers the rest.
_CLAMSCAN_LIMITS = ["--max-filesize=512M", "--max-scansize=1024M", "--pcre-max-filesize=512M"]


def scan(config: MediaConfig, cwd: str, name: str, field: str) -> None:
    """Return when ClamAV calls ``cwd/name`` clean; raise otherwise."""
    if config.clamd_socket:
        signature = _scan_clamd(config, os.path.join(cwd, name))
    else:
        signature = _scan_clamscan(config, cwd, name)
    if signature is None:
        return
    if signature.startswith(_LIMIT_PREFIX):
        raise media_rejected(
            field, Reason.SCAN_LIMIT_EXCEEDED, "The file exceeds the virus scanner's limits and cannot be verified"
        )
    raise media_rejected(field, Reason.INFECTED, f"The virus scanner rejected the file ({signature})")


def clamscan_argv(config: MediaConfig, name: str) -> list[str]:
    # No --alert-encrypted: encrypted PDFs are refused by the PDF check with
    # the precise reason, and no other accepted format can be encrypted.
    argv = [config.clamscan, "--no-summary", "--stdout", "--alert-exceeds-max=yes", *_CLAMSCAN_LIMITS]
    if config.clamav_db:
        argv.append(f"--database={config.clamav_db}")
    return [*argv, name]


def _scan_clamscan(config: MediaConfig, cwd: str, name: str) -> str | None:
    result = run_tool(
        clamscan_argv(config, name), dependency="clamav", cwd=cwd,
        timeout=config.scan_timeout, memory_bytes=config.scan_memory_bytes,
    )
    if result.returncode == 0:
        return None
    if result.returncode == 1:
        prefix, suffix = f"{name}: ", " FOUND"
        for line in result.stdout.decode("utf-8", "replace").splitlines():
            if line.startswith(prefix) and line.endswith(suffix):
                return line[len(prefix):-len(suffix)].strip() or "unknown"
    raise tool_failed("clamav", result, "the scan did not complete")


class _Clamd:
    """One clamd conversation under an overall deadline."""

    def __init__(self, path: str, timeout: float):
        self.deadline = time.monotonic() + timeout
        self.sock = socket.socket(socket.AF_UNIX, socket.SOCK_STREAM)
        try:
            self._arm()
            self.sock.connect(path)
        except BaseException:
            self.sock.close()
            raise

    def _arm(self) -> None:
        remaining = self.deadline - time.monotonic()
        if remaining <= 0:
            raise TimeoutError
        self.sock.settimeout(remaining)

    def send(self, data: bytes) -> None:
        self._arm()
        self.sock.sendall(data)

    def reply(self, limit: int = 4096) -> str:
        data = b""
        while not data.endswith(b"\0") and len(data) < limit:
            self._arm()
            chunk = self.sock.recv(limit)
            if not chunk:
                break
            data += chunk
        return data.rstrip(b"\0").decode("utf-8", "replace").strip()

    def close(self) -> None:
        self.sock.close()


def _talk(config: MediaConfig, command: bytes, path: str | None = None) -> str:
    try:
        conn = _Clamd(config.clamd_socket, config.scan_timeout)
    except (OSError, TimeoutError):
        raise dependency_unavailable("clamav", "clamd is not reachable") from None
    try:
        conn.send(command)
        if path is not None:
            try:
                with open(path, "rb") as fh:
                    while chunk := fh.read(_CHUNK):
                        conn.send(struct.pack(">I", len(chunk)) + chunk)
                conn.send(struct.pack(">I", 0))
            except (BrokenPipeError, ConnectionResetError):
                pass  # clamd stops reading at StreamMaxLength; its reply says why
        return conn.reply()
    except TimeoutError:
        raise dependency_unavailable("clamav", "clamd did not answer in time") from None
    except OSError:
        raise dependency_unavailable("clamav", "the connection to clamd failed") from None
    finally:
        conn.close()


def _scan_clamd(config: MediaConfig, path: str) -> str | None:
    started = time.monotonic()
    try:
        answer = _talk(config, b"zINSTREAM\0", path)
    finally:   # counted as a clamscan run is (botsvc_media_tool_duration_seconds)
        metrics.media_tool("clamav", time.monotonic() - started)
    if answer == "stream: OK":
        return None
    if answer.startswith("stream: ") and answer.endswith(" FOUND"):
        return answer[len("stream: "):-len(" FOUND")].strip() or "unknown"
    if "size limit exceeded" in answer:
        return f"{_LIMIT_PREFIX}.StreamMaxLength"
    log.warning("clamd answered %r", answer[:300])
    raise dependency_unavailable("clamav", "clamd could not scan the file")


def ping_clamd(config: MediaConfig) -> None:
    if _talk(config, b"zPING\0") != "PONG":
        raise dependency_unavailable("clamav", "clamd does not answer PING")
