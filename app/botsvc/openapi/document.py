"""The OpenAPI 3.1 document, generated from the method catalogue
as the contract asks: every /v2 method, every /manage/v1 method, then the routes
described in routes.py. Request and result schemas come from the very
marshmallow schemas that validate and describe the methods; the failure
answers of each operation list the error codes that operation can give,
grouped by HTTP status. Shaped for client generators too (routes.py,
docs/openapi.md): one failure type, one success type per shared result.
"""
from __future__ import annotations

import json
import warnings

from apispec import APISpec
from apispec.ext.marshmallow import MarshmallowPlugin
from apispec.ext.marshmallow.common import resolve_schema_cls

from botsvc.api.dispatch import PIPELINE_ERRORS
from botsvc.api.registry import METHODS
from botsvc.catalogue.entry import Catalogue, Method
from botsvc.catalogue.markup import ButtonSchema
from botsvc.catalogue.results import MEMBERSHIP_STATUSES
from botsvc.catalogue.validation import FilePart
from botsvc.contract import FILE_KINDS, MEDIA_TYPES, PARSE_MODES
from botsvc.domain import faults
from botsvc.errors import ErrorCode, Reason
from botsvc.manage.dispatch import OPERATOR_ERRORS, OPERATOR_METHODS
from botsvc.openapi import fields as field_rules
from botsvc.openapi import routes

CONTRACT_VERSION = "2.0.0"
IDEMPOTENCY_KEY = "IdempotencyKey"  # the parameter component, by name
JSON = "application/json"
MULTIPART = "multipart/form-data"
# Answers an Idempotency-Key may replay (the contract: 2xx and 4xx but 401, 409, 429).
REPLAYABLE = ("200", "400", "403", "404", "413")

DESCRIPTION = """\
A self-hosted bot messaging service, contract 2.0.0.

Every `/v2/<method>` is a POST with `Authorization: Bearer <bot token>`; the
operator API `/manage/v1/<method>` takes the admin token instead
(`BOTSVC_ADMIN_TOKEN`; without it that surface answers 404). A success is
`{"ok": true, "result": ...}` with HTTP 200; a failure is
`{"ok": false, "error_code", "description", "parameters"}` with the status of
its code. Each operation lists the codes it can answer. An INVALID_PARAMETER
names the offending field in `parameters.field` (and the place inside it in
`parameters.path`); a policy refusal adds `parameters.reason`.

Request bodies are JSON objects (an empty body counts as `{}`; unknown
parameters and `null` values are refused). `multipart/form-data` and
`application/x-www-form-urlencoded` bodies are accepted by every method: a
value whose parameter is not a string is read as JSON text (objects, arrays,
integers, booleans). Methods that take files document their multipart form.

Text limits count UTF-8 bytes: JSON Schema counts characters, so each byte
limit is stated in its field's description (and bounds `maxLength`).
`Idempotency-Key` replays a stored answer with `Idempotent-Replayed: true`;
RATE_LIMITED answers carry `Retry-After`. Every response carries
`X-Request-Id`.
"""


# Value sets many fields share: each is one named component, so that a client
# generator makes one enum of it rather than one per field.
SHARED_ENUMS = {"ParseMode": PARSE_MODES, "MediaType": MEDIA_TYPES, "FileKind": FILE_KINDS,
                "MembershipStatus": MEMBERSHIP_STATUSES}

# The /v2 method groups (their modules in app/botsvc/api/), in the contract's order.
GROUPS = {
    "identity": "The bot and its chats. Reading a membership never grants permission to send.",
    "updates": "Short polling for updates (there is no long polling).",
    "webhooks": "Updates delivered to an HTTPS URL instead of polling.",
    "sending": "Text messages to members who started the bot.",
    "media": "Photos, voice, video, audio, documents, animations and albums.",
    "cards": "Cards: info, product, status or receipt (display only).",
    "callbacks": "The bot's one answer to a user's button click.",
    "editing": "Editing and deleting the bot's own messages.",
    "files": "Uploads (scanned and normalized), file metadata and the download route.",
    "broadcasts": "One message queued for many members, delivered by a worker.",
}


def build(base_url: str, test_tools: bool = False) -> dict:
    """The whole document for this installation: its base address, and with
    the testing tools (BOTSVC_TEST_TOOLS=1) their methods and the codes
    injectFault can make any /v2 method answer."""
    api_errors = (*PIPELINE_ERRORS, *(code for code in faults.INJECTABLE_CODES
                                      if test_tools and code not in PIPELINE_ERRORS))
    plugin = MarshmallowPlugin(schema_name_resolver=_schema_name)
    spec = APISpec(title="botsvc", version=CONTRACT_VERSION, openapi_version="3.1.0",
                   plugins=[plugin], info={"description": DESCRIPTION},
                   servers=[{"url": base_url}])
    field_rules.install(plugin.converter)
    for name, scheme in routes.SECURITY_SCHEMES.items():
        spec.components.security_scheme(name, scheme)
    spec.components.parameter("IdempotencyKey", "header", routes.IDEMPOTENCY_KEY)
    spec.components.schema("ErrorParameters", routes.error_parameters(
        reasons=[reason.value for reason in Reason]))
    spec.components.schema("Failure", routes.FAILURE)
    spec.components.schema("NoParameters", routes.NO_PARAMETERS)
    spec.components.schema("Button", ButtonSchema.JSON_SCHEMA, schema=ButtonSchema)
    with warnings.catch_warnings():
        # Two schemas under one name would silently become "Name1": refuse it.
        warnings.simplefilter("error")
        for method in sorted(METHODS.values(), key=_group_order):
            spec.path(f"{METHODS.prefix}/{method.name}", operations={"post": _operation(
                spec, plugin, METHODS, method, "bot", api_errors, [method.group],
                [IDEMPOTENCY_KEY])})
        for method in OPERATOR_METHODS.values():
            if method.test_tool and not test_tools:
                continue  # 404 METHOD_NOT_FOUND without the setting
            spec.path(f"{OPERATOR_METHODS.prefix}/{method.name}", operations={
                "post": _operation(spec, plugin, OPERATOR_METHODS, method, "admin",
                                   OPERATOR_ERRORS, [routes.OPERATOR_TAG["name"]], [])})
    for group in dict.fromkeys(method.group for method in sorted(METHODS.values(),
                                                                 key=_group_order)):
        spec.tag({"name": group, "description": GROUPS.get(group, "")})
    spec.tag(routes.OPERATOR_TAG)
    spec.tag(routes.INSTALLATION_TAG)
    for path, operations in routes.other_paths().items():
        spec.path(path, operations=operations)
    spec.components.header("RequestId", routes.REQUEST_ID_HEADER)
    return routes.with_request_ids(_defaults_in_words(_with_shared_enums(spec.to_dict())))


def _operation(spec: APISpec, plugin, catalogue: Catalogue, method: Method, security: str,
               surface_errors: tuple[ErrorCode, ...], tags: list[str],
               parameters: list) -> dict:
    codes = [*surface_errors, *(code for code in method.errors if code not in surface_errors)]
    responses = {"200": _success(spec, _result_schema(plugin, method))}
    responses.update(routes.failures(codes))
    for status in REPLAYABLE:
        if status in responses:
            responses[status].setdefault("headers", {})["Idempotent-Replayed"] = \
                routes.REPLAYED_HEADER
    return {
        "operationId": method.name if catalogue is METHODS else f"manage_{method.name}",
        "summary": method.summary, "description": routes.failures_text(codes), "tags": tags,
        "security": [{security: []}], "parameters": parameters,
        "requestBody": _request_body(plugin, method),
        "responses": responses}


def _success(spec: APISpec, result: dict) -> dict:
    """The 200 answer: a shared ``Ok<Result>`` component when the result is
    one many operations give, made the first time it is needed."""
    shared = routes.shared_success(result)
    if shared is None:
        return routes.success(result)
    name, envelope = shared
    if name not in spec.components.schemas:
        spec.components.schema(name, envelope)
    return {"description": "Success", "content": {JSON: {"schema": {
        "$ref": f"#/components/schemas/{name}"}}}}


def _request_body(plugin, method: Method) -> dict:
    if method.schema is None:
        return {"required": False, "content": {JSON: {"schema": {
            "$ref": "#/components/schemas/NoParameters"}}}}
    ref = plugin.converter.resolve_nested_schema(method.schema)
    file_fields = method.file_fields
    if not file_fields:
        return {"required": False, "content": {JSON: {"schema": ref}}}
    multipart = _multipart_schema(plugin, method, file_fields)
    content = {MULTIPART: {"schema": multipart}}
    if not _needs_a_file_part(method, file_fields):
        content = {JSON: {"schema": ref}, **content}
    return {"required": True, "content": content}


def _defaults_in_words(document: dict) -> dict:
    """A request parameter's default is said in its description, not with
    ``default``: generators (openapi-typescript's defaultNonNullable) take a
    component's defaulted field as always present, true of an answer but
    not of a request, where it may be left out (the service fills it in)."""
    schemas = document["components"]["schemas"]
    for operations in document["paths"].values():
        for operation in operations.values():
            for body in operation.get("requestBody", {}).get("content", {}).values():
                schema = body["schema"]
                if "$ref" in schema:
                    schema = schemas[schema["$ref"].rsplit("/", 1)[1]]
                for value in schema.get("properties", {}).values():
                    if "default" in value:
                        said = f"Default: {json.dumps(value.pop('default'))}."
                        value["description"] = field_rules.joined(value, said)
    return document


def _multipart_schema(plugin, method: Method, file_fields: tuple[str, ...]) -> dict:
    """The JSON schema with each file field made a binary file part (or, for a
    media field, also a file_id given as a text value)."""
    schema = plugin.converter.schema2jsonschema(method.schema)
    properties = dict(schema["properties"])
    for name in file_fields:
        properties[name] = {"type": "string", "contentMediaType": "application/octet-stream",
                            "description": properties[name].get("description", "")}
    return {**schema, "properties": properties}


def _needs_a_file_part(method: Method, file_fields: tuple[str, ...]) -> bool:
    return any(isinstance(method.schema.fields[name], FilePart)
               and method.schema.fields[name].required for name in file_fields)


def _result_schema(plugin, method: Method) -> dict:
    if method.result is None:
        return {"description": "not described yet"}
    return plugin.converter.field2property(method.result)


def _with_shared_enums(document: dict) -> dict:
    """Each field whose values are one of SHARED_ENUMS refers to that
    component (its own default and description kept beside the ``$ref``)."""
    names = {tuple(values): name for name, values in SHARED_ENUMS.items()}

    def share(node):
        if isinstance(node, dict):
            for value in node.get("properties", {}).values():
                name = names.get(tuple(value.get("enum", ()))) if isinstance(value, dict) else None
                if name and value.get("type") == "string":
                    del value["enum"], value["type"]
                    value["$ref"] = f"#/components/schemas/{name}"
            for child in node.values():
                share(child)
        elif isinstance(node, list):
            for child in node:
                share(child)

    share(document["paths"])
    share(document["components"]["schemas"])
    document["components"]["schemas"].update(
        {name: {"type": "string", "enum": list(values)} for name, values in SHARED_ENUMS.items()})
    return document


def _schema_name(schema) -> str:
    """Component names: the class name without "Schema". Request schemas and
    results share one namespace, so a clash fails the build (see ``build``)."""
    name = resolve_schema_cls(schema).__name__
    return name.removesuffix("Schema") or name


def _group_order(method: Method) -> int:
    return list(GROUPS).index(method.group) if method.group in GROUPS else len(GROUPS)
