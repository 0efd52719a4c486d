"""POST /manage/v1/<method> with the admin token. The envelope and error rules
are those of /v2; there is no idempotency or rate limit here. With no admin
token configured, the whole surface answers 404."""
from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass

from flask import Blueprint, Response, current_app, request
from marshmallow import Schema

from app.auth import bearer_token, check_admin_token
from app.body import RequestBody, coerce_form_values, parse_body
from app.db import get_db
from app.envelope import json_response, ok_body
from app.errors import ApiError, ErrorCode, invalid
from app.validation import load

bp = Blueprint("manage", __name__, url_prefix="/manage/v1")


@dataclass(frozen=True)
class OperatorMethod:
    handler: Callable
    schema: Schema | None


OPERATOR_METHODS: dict[str, OperatorMethod] = {}


def operator_method(name: str, schema: Schema | None = None):
    def register(handler):
        OPERATOR_METHODS[name] = OperatorMethod(handler, schema)
        return handler
    return register


@bp.route("/<name>", methods=["GET", "HEAD", "POST", "PUT", "PATCH", "DELETE", "OPTIONS"],
          provide_automatic_options=False)
def call_operator_method(name: str) -> Response:
    settings = current_app.config["SETTINGS"]
    method = OPERATOR_METHODS.get(name)
    if settings.admin_token is None or method is None:
        raise ApiError(ErrorCode.METHOD_NOT_FOUND, "Not found")
    if request.method != "POST":
        raise ApiError(ErrorCode.METHOD_NOT_ALLOWED, "Methods are called with POST")
    if not check_admin_token(bearer_token(request.headers.get("Authorization")),
                             settings.admin_token):
        raise ApiError(ErrorCode.UNAUTHORIZED, "Missing or invalid admin token")
    body = parse_body(request, settings.upload_max_bytes)
    return json_response(200, ok_body(execute_operator_method(method, body)))


def execute_operator_method(method: OperatorMethod, body: RequestBody):
    """Validate a parsed body with the method's schema and run its handler: the
    one execution path of /manage/v1 and of the sandbox's pages."""
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
    return method.handler(get_db(), params)
