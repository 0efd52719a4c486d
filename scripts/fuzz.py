"""Schemathesis against the real service (scripts/server: gunicorn, 2
workers), driven by the service's own /openapi.json: positive and negative
data for every /v2 operation and the download route (as a bot with a
member), then every /manage/v1 operation (as the operator).

It fails on any 5xx and on any answer that breaks the document: a status,
Content-Type, header or body the operation does not document, invalid data
that is accepted, an unsupported HTTP method that is not a 405 with Allow,
a call without credentials that is not refused.

    scripts/fuzz                      # 200 examples per operation, a random seed
    scripts/fuzz --max-examples 50 --seed 7

The suite runs a bounded, seeded pass (tests/openapi/test_fuzz.py).
"""
from __future__ import annotations

import argparse
import random
import sys
import tempfile

from botsvc.devkit.fuzz import fuzz
from botsvc.devkit.servers import running_server


def main(argv: list[str]) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--max-examples", type=int, default=200)
    parser.add_argument("--seed", type=int, default=None)
    args = parser.parse_args(argv)
    seed = args.seed if args.seed is not None else random.randrange(2**31)
    failed = False
    with tempfile.TemporaryDirectory(prefix="botsvc-fuzz-") as work_dir, \
            running_server(work_dir) as server:
        for surface, done in fuzz(server, max_examples=args.max_examples, seed=seed,
                                  work_dir=work_dir):
            print(f"== {surface.name} (seed {seed})\n{done.stdout}{done.stderr}")
            failed = failed or done.returncode != 0
        if failed:
            print(f"== server log\n{server.log_tail(200)}")
    return 1 if failed else 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
