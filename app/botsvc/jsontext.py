"""The one JSON text form of what the service stores and sends: compact, and
UTF-8 as it is (no ``\\u`` escapes). Flask-free, for the domain and the worker."""
from __future__ import annotations

import json

# One encoder for the process: ``json.dumps`` with any option builds a new
# one per call. The encoder keeps no state between calls.
_ENCODER = json.JSONEncoder(ensure_ascii=False, separators=(",", ":"))


def dumps(value) -> str:
    return _ENCODER.encode(value)
