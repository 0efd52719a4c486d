"""The contract as a document: ``GET /openapi.json``,
generated from the method catalogue (document.py), and ``GET /docs``, a page
of it made with the Swagger UI files vendored in static/ (with their
licence), served by the service itself under a CSP that allows only 'self'.
"""
from __future__ import annotations

import functools
import os

from flask import Blueprint, Response, current_app, send_from_directory

from botsvc.config import Settings
from botsvc.jsontext import dumps
from botsvc.openapi.document import build

STATIC = os.path.join(os.path.dirname(__file__), "static")
# The page and its assets load nothing but themselves (Swagger UI's icons are
# inline SVG data, hence data: for images).
DOCS_CSP = ("default-src 'self'; img-src 'self' data:; object-src 'none'; base-uri 'none'; "
            "frame-ancestors 'none'; form-action 'none'")

bp = Blueprint("openapi", __name__, static_folder=STATIC, static_url_path="/docs")


@functools.cache
def _document_text(base_url: str, test_tools: bool) -> str:
    return dumps(build(base_url, test_tools))


def document_text(settings: Settings) -> str:
    """The document as JSON text: what /openapi.json serves, byte for byte."""
    return _document_text(settings.base_url, settings.test_tools)


@bp.get("/openapi.json")
def openapi_json() -> Response:
    return Response(document_text(current_app.config["SETTINGS"]), mimetype="application/json")


@bp.get("/docs")
def docs_page() -> Response:
    return send_from_directory(STATIC, "docs.html", mimetype="text/html")


@bp.after_request
def page_headers(response: Response) -> Response:
    response.headers["Content-Security-Policy"] = DOCS_CSP
    response.headers["X-Content-Type-Options"] = "nosniff"
    return response
