"""POST /manage/v1/<method> with the admin token. The envelope and error rules
are those of /v2; there is no idempotency or rate limit here. With no admin
token configured, the whole surface answers 404.

``execute`` is what a request does once it is let in; the ``botsvc`` command
calls it too, so a command can do nothing the API would refuse."""
from __future__ import annotations

import sqlite3

from flask import Blueprint, Response, current_app, request
from marshmallow import Schema

from botsvc import clock, disk
from botsvc.auth import bearer_token, check_admin_token
from botsvc.catalogue.body import RequestBody, is_form_request, parse_body
from botsvc.catalogue.entry import Catalogue, Method, validate_request
from botsvc.db import get_db
from botsvc.envelope import json_response, ok_body
from botsvc.errors import CONNECTION_ERRORS, ApiError, ErrorCode, MethodNotAllowed

bp = Blueprint("manage", __name__, url_prefix="/manage/v1")

OPERATOR_METHODS = Catalogue("/manage/v1")
# What any operator method can answer besides its own codes.
OPERATOR_ERRORS = (ErrorCode.METHOD_NOT_FOUND, ErrorCode.UNAUTHORIZED,
                   ErrorCode.REQUEST_TOO_LARGE, ErrorCode.INVALID_JSON,
                   ErrorCode.INVALID_PARAMETER, ErrorCode.STORAGE_FULL,
                   ErrorCode.INTERNAL_ERROR,
                   *CONNECTION_ERRORS)


def operator_method(name: str, schema: Schema | None = None, *, result=None,
                    errors: tuple[ErrorCode, ...] = (), summary: str = "",
                    test_tool: bool = False):
    """Register an operator method; its handler takes ``(conn, params)``.
    A ``test_tool`` exists only with BOTSVC_TEST_TOOLS=1."""
    return OPERATOR_METHODS.register(name, schema, result=result, errors=errors,
                                     summary=summary, test_tool=test_tool)


def execute(method: Method, conn: sqlite3.Connection, body: RequestBody):
    """Validate with the method's own schema, then run it; its result."""
    params = validate_request(method, body)
    clock.refresh(conn)  # users' messages and the like carry the service's dates
    return method.handler(conn, params)


@bp.route("/<name>", methods=["GET", "HEAD", "POST", "PUT", "PATCH", "DELETE", "OPTIONS"],
          provide_automatic_options=False)
def call_operator_method(name: str) -> Response:
    settings = current_app.config["SETTINGS"]
    method = OPERATOR_METHODS.get(name)
    if method is not None and method.test_tool and not settings.test_tools:
        method = None
    if settings.admin_token is None or method is None:
        raise ApiError(ErrorCode.METHOD_NOT_FOUND, "Not found")
    if request.method != "POST":
        raise MethodNotAllowed(("POST",), "Methods are called with POST")
    if not check_admin_token(bearer_token(request.headers.get("Authorization")),
                             settings.admin_token):
        raise ApiError(ErrorCode.UNAUTHORIZED, "Missing or invalid admin token")
    if method.file_fields and is_form_request(request):
        disk.check_room_for_upload(settings.data_dir, settings.min_free_bytes)
    body = parse_body(request, settings.upload_max_bytes)
    return json_response(200, ok_body(execute(method, get_db(), body)))
