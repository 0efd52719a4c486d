"""Upload decisions, scanning and normalization: a Flask-free library.

``process_upload`` takes one file already streamed to quarantine and returns
a clean, normalized file or raises the contract's ApiError.
"""
from .config import MediaConfig
from .deps import check_dependencies
from .pipeline import ProcessedFile, process_upload
from .signatures import build_test_signature_db

__all__ = [
    "MediaConfig",
    "ProcessedFile",
    "build_test_signature_db",
    "check_dependencies",
    "process_upload",
]
