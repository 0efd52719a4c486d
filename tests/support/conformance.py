"""Every answer the service gives conforms to its OpenAPI document:
the test client of every app the suite makes checks each
response to a documented operation against the document, so the whole
suite (every method, success and failure alike) doubles as a conformance
test. A response that breaks the document fails the test that caused it.

Checked: the status is one the operation documents; the headers it marks
required are there; the Content-Type is one it documents; a JSON body
validates against the schema of that status (error_code among the codes
the operation lists for it, the result exactly as app/botsvc/catalogue/results.py says).
"""
from __future__ import annotations

import functools
import json
from collections.abc import Callable

from flask.testing import FlaskClient
from jsonschema import Draft202012Validator
from referencing import Registry, Resource
from referencing.jsonschema import DRAFT202012

DOCUMENT_URI = "urn:botsvc-openapi"


@functools.cache
def document(test_tools: bool = False) -> dict:
    """The document of an installation with or without BOTSVC_TEST_TOOLS=1."""
    from botsvc.openapi.document import build

    return build("http://127.0.0.1:8080", test_tools)


@functools.cache
def _registry(test_tools: bool) -> Registry:
    return Registry().with_resource(DOCUMENT_URI, Resource(document(test_tools), DRAFT202012))


@functools.cache
def _validator(pointer: str, test_tools: bool) -> Draft202012Validator:
    """The schema at ``pointer`` with the document's references written in
    place: jsonschema resolved each ``$ref`` on every validation, over half
    the cost of checking an answer (measured), and the suite checks every
    answer. A reference back into itself stays a reference (the registry)."""
    document_ = document(test_tools)
    return Draft202012Validator(_inlined(_at(document_, pointer), document_, ()),
                                registry=_registry(test_tools))


def _at(document_: dict, pointer: str):
    node = document_
    for part in pointer.lstrip("/").split("/"):
        part = part.replace("~1", "/").replace("~0", "~")
        node = node[int(part)] if isinstance(node, list) else node[part]
    return node


def _inlined(node, document_: dict, within: tuple[str, ...]):
    """``node`` with each local ``$ref`` replaced by what it names (kept
    beside any keywords of its own by ``allOf``, which means the same)."""
    if isinstance(node, list):
        return [_inlined(item, document_, within) for item in node]
    if not isinstance(node, dict):
        return node
    ref = node.get("$ref")
    if not (isinstance(ref, str) and ref.startswith("#")):
        return {key: _inlined(value, document_, within) for key, value in node.items()}
    if ref in within:
        return {**node, "$ref": DOCUMENT_URI + ref}
    target = _inlined(_at(document_, ref[1:]), document_, (*within, ref))
    rest = {key: _inlined(value, document_, within) for key, value in node.items()
            if key != "$ref"}
    return {"allOf": [target], **rest} if rest else target


def _escape(part: str) -> str:
    return part.replace("~", "~0").replace("/", "~1")


def operation_of(path: str, http_method: str, test_tools: bool = False) -> dict | None:
    path_item = document(test_tools)["paths"].get(path)
    return path_item.get(http_method.lower()) if path_item else None


def problems(path: str, http_method: str, status: int, headers, mimetype: str,
             body: Callable[[], bytes], test_tools: bool = False) -> list[str]:
    """What in this answer contradicts the document ([] when it conforms, or
    when the operation is not a documented one). ``body`` is read only for a
    JSON answer (a file download is left to stream)."""
    operation = operation_of(path, http_method, test_tools)
    if operation is None:
        return []
    answers = operation["responses"]
    if str(status) not in answers:
        return [f"{http_method} {path}: status {status} is not documented "
                f"(documented: {', '.join(answers)}): {_peek(mimetype, body)}"]
    answer = answers[str(status)]
    found = [f"{http_method} {path} {status}: required header {name} is missing"
             for name, spec in answer.get("headers", {}).items()
             if spec.get("required") and name not in headers]
    content = answer.get("content")
    if not content or http_method.upper() == "HEAD":
        return found
    if mimetype not in content and "*/*" not in content:
        return [*found, f"{http_method} {path} {status}: Content-Type {mimetype} is not one "
                        f"of {', '.join(content)}"]
    if mimetype != "application/json":
        return found
    pointer = "/".join(["/paths", _escape(path), http_method.lower(), "responses", str(status),
                        "content", _escape(mimetype), "schema"])
    instance = json.loads(body())
    return [*found, *(f"{http_method} {path} {status}: {error.message} at "
                      f"{'/'.join(map(str, error.absolute_path)) or 'the body'}"
                      for error in _validator(pointer, test_tools).iter_errors(instance))]


def _peek(mimetype: str, body: Callable[[], bytes]) -> str:
    return repr(body()[:300]) if mimetype == "application/json" else mimetype


class ConformingClient(FlaskClient):
    """Flask's test client, failing on any answer that breaks the document."""

    def open(self, *args, **kwargs):
        response = super().open(*args, **kwargs)
        request = response.request
        found = problems(request.path, request.method, response.status_code,
                         response.headers, response.mimetype, response.get_data,
                         self.application.config["SETTINGS"].test_tools)
        assert not found, "\n".join(found)
        return response
