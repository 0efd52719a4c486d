"""Upload decisions, scanning and normalization: a Flask-free library.

``process_upload`` takes one file already streamed to quarantine and returns
a clean, normalized file or raises the contract's ApiError.
"""
from .config import MediaConfig
from .deps import check_dependencies, probe_tools
from .pipeline import ProcessedFile, process_upload
from .runner import TOOLS
from .signatures import OFFLINE_DATABASE_DIR, build_test_signature_db, needs_offline_database

__all__ = [
    "OFFLINE_DATABASE_DIR",
    "TOOLS",
    "MediaConfig",
    "ProcessedFile",
    "build_test_signature_db",
    "check_dependencies",
    "needs_offline_database",
    "probe_tools",
    "process_upload",
]
