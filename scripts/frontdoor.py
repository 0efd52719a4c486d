"""Write botsvc's front door, the nginx configuration rendered from the one
template (scripts/nginx/botsvc.conf; the rendering: devkit/frontdoor.py).

    python -m scripts.frontdoor --env-file /etc/botsvc/botsvc.env --out FILE \\
        [--server-name NAME] [--tls-cert FILE --tls-key FILE] [--acme-root DIR] ...

scripts/install-service runs it.
"""
from __future__ import annotations

import argparse
import os
import sys
from pathlib import Path

if __package__ in (None, ""):   # run as a file: the checkout's packages are importable
    sys.path.insert(0, str(Path(__file__).resolve().parent.parent))

from botsvc.config import Settings  # noqa: E402
from botsvc.devkit.frontdoor import FrontDoor, read_env_file, render  # noqa: E402


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(prog="scripts/frontdoor.py", description=__doc__.split("\n")[0])
    parser.add_argument("--env-file", required=True, help="botsvc's settings (/etc/botsvc/botsvc.env)")
    parser.add_argument("--out", required=True, help="where to write the configuration")
    parser.add_argument("--server-name", default="_")
    parser.add_argument("--tls-cert")
    parser.add_argument("--tls-key")
    parser.add_argument("--acme-root")
    parser.add_argument("--log-dir", default="/var/log/nginx")
    parser.add_argument("--no-ipv6", dest="ipv6", action="store_false")
    parser.add_argument("--client-conns", type=int, default=FrontDoor.client_conns)
    parser.add_argument("--client-rate", type=int, default=FrontDoor.client_rate)
    parser.add_argument("--client-burst", type=int, default=FrontDoor.client_burst)
    args = parser.parse_args(argv)
    if (args.tls_cert is None) != (args.tls_key is None):
        parser.error("--tls-cert and --tls-key go together")
    env = {name: value for name, value in read_env_file(args.env_file).items()
           if name.startswith("BOTSVC_")}
    settings = Settings.from_env(env, secret=False)
    door = FrontDoor.for_settings(
        settings, server_name=args.server_name, tls_cert=args.tls_cert, tls_key=args.tls_key,
        acme_root=args.acme_root, log_dir=args.log_dir, ipv6=args.ipv6,
        client_conns=args.client_conns, client_rate=args.client_rate,
        client_burst=args.client_burst)
    text = render(door)
    tmp = f"{args.out}.tmp"
    with open(tmp, "w") as out:
        out.write(text)
    os.replace(tmp, args.out)
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
