"""POST /manage/v1/<method> with the admin token. The envelope and error rules
are those of /v2; there is no idempotency or rate limit here. With no admin
token configured, the whole surface answers 404."""
from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass

from flask import Blueprint, Response, current_app, request
from marshmallow import Schema

from app import clock
from app.auth import bearer_token, check_admin_token
from app.body import coerce_form_values, parse_body
from app.db import get_db
from app.envelope import json_response, ok_body
from app.errors import ApiError, ErrorCode, invalid
from app.validation import load

bp = Blueprint("manage", __name__, url_prefix="/manage/v1")


@dataclass(frozen=True)
class OperatorMethod:
    handler: Callable
    schema: Schema | None
    # Exists only with BOTSVC_TEST_TOOLS=1 (DECISIONS §9); otherwise unknown.
    test_tool: bool = False


OPERATOR_METHODS: dict[str, OperatorMethod] = {}


def operator_method(name: str, schema: Schema | None = None, *, test_tool: bool = False):
    def register(handler):
        OPERATOR_METHODS[name] = OperatorMethod(handler, schema, test_tool)
        return handler
    return register


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
        raise ApiError(ErrorCode.METHOD_NOT_ALLOWED, "Methods are called with POST")
    if not check_admin_token(bearer_token(request.headers.get("Authorization")),
                             settings.admin_token):
        raise ApiError(ErrorCode.UNAUTHORIZED, "Missing or invalid admin token")
    body = parse_body(request, settings.upload_max_bytes)
    if body.invalid is not None:
        raise body.invalid
    params = body.params
    if body.is_form and method.schema is not None:
        params = coerce_form_values(method.schema.fields, params)
    params = {**params, **body.files}
    if method.schema is not None:
        params = load(method.schema, params)
    elif params:
        name = sorted(params)[0]
        raise invalid(name, f"Unknown parameter: {name}")
    conn = get_db()
    clock.refresh(conn)  # users' messages and the like carry the service's dates
    return json_response(200, ok_body(method.handler(conn, params)))
