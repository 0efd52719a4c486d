"""The one JSON text form of what the service stores and sends: compact, and
UTF-8 as it is (no ``\\u`` escapes). Flask-free, for the domain and the worker."""
from __future__ import annotations

import json


def dumps(value) -> str:
    return json.dumps(value, ensure_ascii=False, separators=(",", ":"))
