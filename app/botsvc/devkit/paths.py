"""Where the checkout is, for code that runs its scripts or reads its files."""
from pathlib import Path

PACKAGE = Path(__file__).resolve().parents[1]   # app/botsvc/devkit/paths.py: the package's folder
SOURCE_ROOT = PACKAGE.parent                    # app/: the source root, what an editor adds to its path
REPO = SOURCE_ROOT.parent                       # the checkout
