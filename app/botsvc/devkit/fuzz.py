"""Schemathesis against a real server, driven by the service's own
/openapi.json: positive and negative data for every /v2 operation and the
download route (as a bot with a member), then every /manage/v1 operation
(as the operator). scripts/fuzz runs a long pass; the suite a bounded,
seeded one (tests/openapi/test_fuzz.py)."""
from __future__ import annotations

import os
import subprocess
from dataclasses import dataclass

from botsvc.devkit.paths import REPO
from botsvc.testkit.server import LocalServer

SCHEMATHESIS = os.path.join(REPO, ".venv", "bin", "schemathesis")
CHECKS = ("not_a_server_error", "status_code_conformance", "content_type_conformance",
          "response_headers_conformance", "response_schema_conformance",
          "negative_data_rejection", "unsupported_method", "missing_required_header",
          "ignored_auth")


@dataclass(frozen=True)
class Surface:
    name: str
    paths: str          # --include-path-regex


BOT_SURFACE = Surface("/v2 and the download route", r"^/(v2/|download\.php$)")
# After the bot's surface: the operator may disable the platform or the bot.
OPERATOR_SURFACE = Surface("/manage/v1", r"^/manage/v1/")


def bot_token(server: LocalServer) -> str:
    """A bot with one member, so the bot's surface has a real chat."""
    created = server.operator("createBot", username="fuzzing_bot")
    user = server.operator("createUser")["user_id"]
    server.operator("userStart", user_id=user, bot_id=created["bot"]["id"])
    return created["token"]


def run_schemathesis(server: LocalServer, surface: Surface, token: str, *,
                     max_examples: int, seed: int, work_dir: str,
                     ) -> subprocess.CompletedProcess:
    command = [SCHEMATHESIS, "--no-color", "run", f"{server.base_url}/openapi.json",
               "--include-path-regex", surface.paths,
               "-H", f"Authorization: Bearer {token}",
               "--checks", ",".join(CHECKS), "--max-examples", str(max_examples),
               "--seed", str(seed), "--workers", "2", "--request-timeout", "30",
               "--suppress-health-check", "too_slow,filter_too_much",
               "--output-sanitize", "true"]
    # cwd: schemathesis keeps its example database in ./.schemathesis
    return subprocess.run(command, cwd=work_dir, capture_output=True, text=True,
                          env={**os.environ, "NO_COLOR": "1"})


def fuzz(server: LocalServer, *, max_examples: int, seed: int, work_dir: str
         ) -> list[tuple[Surface, subprocess.CompletedProcess]]:
    runs = [(BOT_SURFACE, bot_token(server)), (OPERATOR_SURFACE, server.admin_token)]
    return [(surface, run_schemathesis(server, surface, token, max_examples=max_examples,
                                       seed=seed, work_dir=work_dir))
            for surface, token in runs]
