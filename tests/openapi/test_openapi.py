"""GET /openapi.json and GET /docs: the document is valid
OpenAPI 3.1, made from the catalogue (every method of both surfaces, with
its request and result schemas and error codes), and its page loads nothing
from outside the service. That every answer conforms is checked by the test
client of the whole suite (tests/support/conformance.py), tested here too."""
from __future__ import annotations

import json
import os
import re
from html.parser import HTMLParser

import pytest
from openapi_spec_validator import validate

from botsvc.api.dispatch import PIPELINE_ERRORS
from botsvc.api.registry import METHODS
from botsvc.domain import faults
from botsvc.errors import Reason
from botsvc.manage.dispatch import OPERATOR_ERRORS, OPERATOR_METHODS
from botsvc.openapi import DOCS_CSP, STATIC
from tests.support.conformance import problems

SURFACES = [(METHODS, PIPELINE_ERRORS, "bot"), (OPERATOR_METHODS, OPERATOR_ERRORS, "admin")]
ALL_METHODS = [(catalogue, errors, security, method) for catalogue, errors, security in SURFACES
               for method in catalogue.values()]


def fetch_document(client) -> dict:
    response = client.get("/openapi.json")
    assert response.status_code == 200 and response.mimetype == "application/json"
    return response.get_json()


@pytest.fixture
def document(client):
    return fetch_document(client)


@pytest.fixture(scope="module")
def tools_document(make_module_app):
    """The document of an installation with BOTSVC_TEST_TOOLS=1, fetched once
    (the tests only read it; one is parametrized over every method)."""
    return fetch_document(make_module_app(test_tools=True).test_client())


def resolve(document: dict, schema: dict) -> dict:
    while "$ref" in schema:
        schema = document["components"]["schemas"][schema["$ref"].rsplit("/", 1)[-1]]
    return schema


def error_codes(answer: dict) -> list[str]:
    """A failure answer's codes: the one Failure envelope, narrowed beside its $ref."""
    schema = answer["content"]["application/json"]["schema"]
    assert schema["$ref"] == "#/components/schemas/Failure"
    return schema["properties"]["error_code"]["enum"]


def test_the_document_is_valid_openapi_3_1(document):
    validate(document)
    assert document["openapi"] == "3.1.0"
    assert document["info"]["version"] == "2.0.0"
    assert document["servers"] == [{"url": "http://127.0.0.1:8080"}]
    assert set(document["components"]["securitySchemes"]) == {"bot", "admin", "metrics"}


@pytest.mark.parametrize("catalogue, surface_errors, security, method", ALL_METHODS,
                         ids=[f"{c.prefix}/{m.name}" for c, _, _, m in ALL_METHODS])
def test_every_method_is_there_with_its_schemas_and_codes(tools_document, catalogue,
                                                          surface_errors, security, method):
    document = tools_document
    operation = document["paths"][f"{catalogue.prefix}/{method.name}"]["post"]
    assert method.summary and operation["summary"] == method.summary
    assert operation["security"] == [{security: []}]
    # The request: the method's own schema, field for field.
    bodies = operation["requestBody"]["content"]
    for media_type, body in bodies.items():
        schema = resolve(document, body["schema"])
        expected = set(method.schema.fields) if method.schema is not None else set()
        assert set(schema.get("properties", {})) == expected, media_type
        assert schema["additionalProperties"] is False
    assert ("multipart/form-data" in bodies) == bool(method.file_fields)
    # The result, as the catalogue entry describes it.
    assert method.result is not None
    result = resolve(document, operation["responses"]["200"]["content"]["application/json"][
        "schema"])
    assert result["properties"]["ok"] == {"const": True}
    assert result["properties"]["result"] not in ({}, {"description": "not described yet"})
    # Every code it can answer, under its own status, and no other.
    documented = {}
    for status, answer in operation["responses"].items():
        if status != "200":
            documented[status] = set(error_codes(answer))
            assert answer["x-error-codes"] == error_codes(answer)
            assert f"{status}: {', '.join(error_codes(answer))}" in operation["description"]
    expected = {}
    # With the testing tools, injectFault can make any /v2 method answer these.
    injectable = faults.INJECTABLE_CODES if catalogue is METHODS else ()
    for code in (*surface_errors, *injectable, *method.errors):
        expected.setdefault(str(code.http_status), set()).add(code.value)
    assert documented == expected


def test_without_the_testing_tools_their_methods_and_injected_codes_are_not_documented(
        document, tools_document):
    tools = {name for name, method in OPERATOR_METHODS.items() if method.test_tool}
    assert tools == {"advanceClock", "injectFault", "clearFaults", "reset", "redeliverUpdate",
                     "resendCall"}
    assert not tools & {path.rsplit("/", 1)[-1] for path in document["paths"]
                        if path.startswith("/manage/v1/")}
    assert {f"/manage/v1/{name}" for name in tools} <= set(tools_document["paths"])
    forbidden = document["paths"]["/v2/getMe"]["post"]["responses"]["403"]
    assert "BOT_BLOCKED" not in error_codes(forbidden)
    forbidden = tools_document["paths"]["/v2/getMe"]["post"]["responses"]["403"]
    assert "BOT_BLOCKED" in error_codes(forbidden)


def test_limits_and_identifiers_read_as_the_contract_says(document):
    schemas = document["components"]["schemas"]
    text = schemas["SendMessage"]["properties"]["text"]
    assert (text["minLength"], text["maxLength"]) == (1, 16384)
    assert "16384 bytes of UTF-8" in text["description"]
    assert schemas["SendPhoto"]["properties"]["photo"]["pattern"] == "^[a-f0-9]{48}$"
    upload = document["paths"]["/v2/uploadFile"]["post"]["requestBody"]["content"]
    assert list(upload) == ["multipart/form-data"]
    assert upload["multipart/form-data"]["schema"]["properties"]["file"]["contentMediaType"] \
        == "application/octet-stream"
    assert schemas["SendMediaGroup"]["properties"]["media"]["maxItems"] == 10
    assert schemas["ErrorParameters"]["properties"]["reason"]["enum"] == [r.value for r in Reason]
    assert "\\Z" not in json.dumps(document)       # Python's end anchor is not ECMA 262
    limited = document["paths"]["/v2/sendMessage"]["post"]["responses"]["429"]
    assert limited["headers"]["Retry-After"]["required"] is True


def test_the_download_route_and_installation_routes_are_described(document):
    download = document["paths"]["/download.php"]
    assert set(download) == {"get", "head"}
    assert download["get"]["security"] == [{"bot": []}, {}]
    assert {"200", "206", "400", "401", "403", "404", "416"} <= set(download["get"]["responses"])
    for path in ("/healthz", "/readyz", "/metrics", "/openapi.json", "/docs"):
        assert "get" in document["paths"][path], path
    assert document["paths"]["/readyz"]["get"]["responses"]["503"]["description"] == "NOT_READY"


def test_the_checker_refuses_what_the_document_does_not_say():
    """The suite's conformance check can fail: an undocumented code, a
    result missing a field, a 429 without Retry-After."""
    def body(value):
        return lambda: json.dumps(value).encode()
    failure = {"ok": False, "error_code": "CHAT_NOT_FOUND", "description": "x", "parameters": {}}
    assert problems("/v2/getChat", "POST", 404, {}, "application/json", body(failure)) == []
    assert problems("/v2/getMe", "POST", 404, {}, "application/json", body(failure))
    assert problems("/v2/getChat", "POST", 404, {}, "application/json",
                    body({**failure, "error_code": "MESSAGE_NOT_FOUND"}))
    assert problems("/v2/getMe", "POST", 200, {}, "application/json",
                    body({"ok": True, "result": {"id": 1}}))
    limited = {**failure, "error_code": "RATE_LIMITED", "parameters": {"retry_after": 1}}
    assert problems("/v2/getMe", "POST", 429, {}, "application/json", body(limited))
    assert problems("/v2/getMe", "POST", 429, {"Retry-After": "1"}, "application/json",
                    body(limited)) == []


class _Assets(HTMLParser):
    def __init__(self):
        super().__init__()
        self.urls = []

    def handle_starttag(self, tag, attrs):
        self.urls += [value for name, value in attrs if name in ("src", "href")]


def test_the_docs_page_loads_only_its_own_assets(client):
    page = client.get("/docs")
    assert page.status_code == 200 and page.mimetype == "text/html"
    assert page.headers["Content-Security-Policy"] == DOCS_CSP
    assert re.search(r"default-src 'self'", DOCS_CSP) and "http" not in DOCS_CSP
    parser = _Assets()
    parser.feed(page.get_data(as_text=True))
    assert parser.urls and all(url.startswith("/") for url in parser.urls)
    for url in parser.urls:
        asset = client.get(url)
        assert asset.status_code == 200, url
        assert asset.headers["Content-Security-Policy"] == DOCS_CSP
    initializer = client.get("/docs/docs.js").get_data(as_text=True)
    assert 'url: "/openapi.json"' in initializer and "validatorUrl: null" in initializer
    # Only what the page loads is vendored, with the licence beside it.
    assert sorted(os.listdir(STATIC)) == [
        "LICENSE", "NOTICE", "docs.html", "docs.js", "swagger-ui-bundle.js",
        "swagger-ui-bundle.js.LICENSE.txt", "swagger-ui.css"]
    assert "Apache License" in client.get("/docs/LICENSE").get_data(as_text=True)


# -- read by client generators (docs/openapi.md) ----------------------------------------

def schemas_in(node, found: list) -> list:
    """Every schema object with properties, anywhere in the document."""
    if isinstance(node, dict):
        if isinstance(node.get("properties"), dict):
            found.append(node)
        for child in node.values():
            schemas_in(child, found)
    elif isinstance(node, list):
        for child in node:
            schemas_in(child, found)
    return found


def test_nothing_a_client_generator_trips_on(tools_document):
    """openapi-python-client 0.29 renders an optional ``const`` into Python
    that does not parse, makes a type of every ``allOf`` and loses a type's
    fields under a ``oneOf`` of ``required`` lists."""
    text = json.dumps(tools_document)
    for keyword in ("allOf", "oneOf", "anyOf"):
        assert f'"{keyword}"' not in text, keyword
    for schema in schemas_in(tools_document, []):
        for name, value in schema["properties"].items():
            if isinstance(value, dict) and "const" in value:
                assert name in schema.get("required", []), (name, value)


def test_request_defaults_are_said_not_required(tools_document):
    """A generator makes a defaulted field of a component always present
    (openapi-typescript): requests say their defaults in words."""
    for path, operations in tools_document["paths"].items():
        for operation in operations.values():
            for body in operation.get("requestBody", {}).get("content", {}).values():
                schema = resolve(tools_document, body["schema"])
                for name, value in schema.get("properties", {}).items():
                    assert "default" not in value, (path, name)
    updates = tools_document["components"]["schemas"]["GetUpdates"]
    assert "required" not in updates
    assert [updates["properties"][name]["description"] for name in ("offset", "limit")] == [
        "Default: 0.", "Default: 100."]


def test_one_failure_type_and_one_success_type_per_shared_result(tools_document):
    schemas = tools_document["components"]["schemas"]
    answers = [(path, status, answer) for path, operations in tools_document["paths"].items()
               for operation in operations.values()
               for status, answer in operation["responses"].items()]
    for path, status, answer in answers:
        if status.startswith(("4", "5")) and "content" in answer:   # HEAD has none
            schema = answer["content"]["application/json"]["schema"]
            assert schema["$ref"] == "#/components/schemas/Failure", (path, status)
    sent = tools_document["paths"]["/v2/sendMessage"]["post"]["responses"]["200"]
    assert sent["content"]["application/json"]["schema"] == {
        "$ref": "#/components/schemas/OkMessage"}
    assert schemas["OkMessage"]["properties"]["result"] == {"$ref": "#/components/schemas/Message"}
    assert schemas["ParseMode"] == {"type": "string", "enum": ["plain"]}
    assert schemas["SendPhoto"]["properties"]["parse_mode"] == {
        "$ref": "#/components/schemas/ParseMode"}
