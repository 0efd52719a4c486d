"""Writes the bot SDK's methods (app/botsvc/bot/methods.py) from the one
catalogue, through the OpenAPI document made of it.

The SDK must not import the server, and the catalogue is the server: its
entries hold their handlers, which hold the domain and SQLite. So the SDK's
methods are generated here, at build and check time, from what the document
says of each /v2 method (its parameters, which are files, its result) and
written as plain Python into the package; tests/bot/test_generated.py fails
when the file is not what this writes now (a method added, renamed or given
a new parameter), naming the command that writes it again:

    .venv/bin/python -m botsvc.devkit.bot_methods
"""
from __future__ import annotations

import re
import sys
from pathlib import Path

from botsvc.openapi.document import build

TARGET = Path(__file__).resolve().parent.parent / "bot" / "methods.py"
REF = "#/components/schemas/"
SCALARS = {"string": "str", "integer": "int", "boolean": "bool", "number": "float"}

HEADER = '''"""One method per /v2 method, generated from the catalogue by
app/botsvc/devkit/bot_methods.py: do not edit (tests/bot/test_generated.py
fails when this file is stale; run ``python -m botsvc.devkit.bot_methods``).
Long because it is generated: every /v2 method twice (``Methods`` and
``AsyncMethods``) and every resource the contract names as a TypedDict.

Parameters are named as the contract names them; a parameter left as None is
not sent. A file parameter takes a file_id (str) or the file itself (bytes,
a path, an open file, or ``(file_name, bytes)``), sent as multipart. Results
are the contract's JSON, typed: each object is a TypedDict of its fields.
"""
from __future__ import annotations

import os
from typing import IO, Any, Literal, Required, TypedDict

FileInput = str | bytes | os.PathLike | IO[bytes] | tuple[str, bytes]
'''


def snake(name: str) -> str:
    return re.sub(r"(?<!^)(?=[A-Z])", "_", name).lower()


class Generator:
    """Walks the document: the TypedDicts it needs, then the methods."""

    def __init__(self, document: dict):
        self.schemas = document["components"]["schemas"]
        self.operations = [(path.removeprefix("/v2/"), item["post"])
                           for path, item in document["paths"].items()
                           if path.startswith("/v2/")]
        self.wanted: list[str] = []   # TypedDicts, in the order first met

    def annotation(self, schema: dict) -> str:
        if "$ref" in schema:
            return self.named(schema["$ref"].removeprefix(REF))
        if "const" in schema:
            return f"Literal[{schema['const']!r}]"
        if "enum" in schema:
            return f"Literal[{', '.join(repr(v) for v in schema['enum'])}]"
        kind = schema.get("type")
        if isinstance(kind, list):   # ["string", "null"]: None is "not sent" anyway
            kind = next(k for k in kind if k != "null")
        if kind == "array":
            return f"list[{self.annotation(schema.get('items', {}))}]"
        if kind == "object":
            return "dict[str, Any]"
        return SCALARS.get(kind, "Any")

    def named(self, name: str) -> str:
        schema = self.schemas[name]
        if schema.get("type") != "object" or "properties" not in schema:
            return self.annotation(schema)          # a shared enum: its values
        if name not in self.wanted:
            self.wanted.append(name)
            for field in schema["properties"].values():
                self.annotation(field)              # what it names, before it is written
        return name

    def typed_dict(self, name: str) -> str:
        schema = self.schemas[name]
        required = set(schema.get("required", ()))
        lines = [f"class {name}(TypedDict, total=False):"]
        for field, spec in schema["properties"].items():
            kind = self.annotation(spec)
            lines.append(f"    {field}: {f'Required[{kind}]' if field in required else kind}")
        return "\n".join(lines)

    def parameters(self, operation: dict) -> tuple[dict, set[str], set[str]]:
        """The request's fields, the required ones and the file parts."""
        content = operation.get("requestBody", {}).get("content", {})
        schema = content.get("application/json", {}).get("schema", {})
        schema = self.schemas[schema["$ref"].removeprefix(REF)] if "$ref" in schema else schema
        multipart = content.get("multipart/form-data", {}).get("schema", {})
        files = {name for name, spec in multipart.get("properties", {}).items()
                 if "contentMediaType" in spec}
        fields = dict(schema.get("properties", {}))
        for name in files:
            fields.setdefault(name, {})
        return fields, set(schema.get("required", ())) | set(multipart.get("required", ())), files

    def result(self, operation: dict) -> str:
        ok = operation["responses"]["200"]["content"]["application/json"]["schema"]
        return self.annotation(self.schemas[ok["$ref"].removeprefix(REF)]["properties"]["result"])

    def method(self, name: str, operation: dict, is_async: bool) -> str:
        fields, required, files = self.parameters(operation)
        ordered = sorted(fields, key=lambda field: field not in required)
        params = ["self"]
        for field in ordered:
            kind = "FileInput" if field in files else self.annotation(fields[field])
            if field not in required and "*" not in params:
                params.append("*")
            params.append(f"{field}: {kind}" if field in required else f"{field}: {kind} | None = None")
        if "*" not in params:
            params.append("*")
        params.append("idempotency_key: str | None = None")
        summary = operation.get("summary", "").rstrip(".")
        return "\n".join([
            f"    {'async ' if is_async else ''}def {snake(name)}(",
            *(f"            {param}," for param in params),
            f"    ) -> {self.result(operation)}:",
            f'        """{name}: {summary}."""',
            f'        return {"await " if is_async else ""}self._call("{name}", {{',
            *(f'            "{field}": {field},' for field in ordered),
            "        }, idempotency_key)",
        ]).replace("{\n        }", "{}")

    def module(self) -> str:
        sync = [self.method(name, op, False) for name, op in self.operations]
        aio = [self.method(name, op, True) for name, op in self.operations]
        names = ", ".join(f'"{name}"' for name, _ in self.operations)
        parts = [HEADER, *(self.typed_dict(name) for name in self.wanted),
                 f"METHOD_NAMES = ({names},)",
                 'class Methods:\n    """Every /v2 method, called at once."""\n\n'
                 "    def _call(self, method: str, params: dict[str, Any],\n"
                 "              idempotency_key: str | None) -> Any:\n"
                 "        raise NotImplementedError\n\n" + "\n\n".join(sync),
                 'class AsyncMethods:\n    """Every /v2 method, awaited."""\n\n'
                 "    async def _call(self, method: str, params: dict[str, Any],\n"
                 "                    idempotency_key: str | None) -> Any:\n"
                 "        raise NotImplementedError\n\n" + "\n\n".join(aio)]
        return "\n\n\n".join(part.rstrip("\n") for part in parts) + "\n"


def render() -> str:
    """The module's text as the catalogue has it now."""
    return Generator(build("")).module()


def main() -> None:
    text = render()
    if TARGET.exists() and TARGET.read_text() == text:
        print(f"{TARGET} is current")
        return
    TARGET.write_text(text)
    print(f"wrote {TARGET}", file=sys.stderr)


if __name__ == "__main__":
    main()
