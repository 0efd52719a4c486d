"""Where the checkout is, for tests that run its scripts or read its files."""
from pathlib import Path

REPO = Path(__file__).resolve().parents[2]
