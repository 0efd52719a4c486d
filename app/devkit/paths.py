"""Where the checkout is, for code that runs its scripts or reads its files."""
from pathlib import Path

REPO = Path(__file__).resolve().parents[2]   # app/devkit/paths.py: the checkout is two folders up
