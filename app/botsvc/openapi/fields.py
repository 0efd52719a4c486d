"""How our own request fields read in JSON Schema: small attribute functions
for apispec's MarshmallowPlugin, one per rule that the built-in converter
cannot see (app/botsvc/catalogue/validation.py defines the fields).

- Byte limits: JSON Schema counts characters, so a byte limit is stated in
  the description and bounds ``maxLength`` (N bytes are at most N characters).
- Integers are 64-bit: the bounds the ``Int`` field enforces are stated.
- file_id fields carry their pattern; a multipart file part is binary.
- Python's ``\\Z`` (end of text) is ``$`` in ECMA 262 regular expressions.
- ``Constant`` fields (``true`` results) are ``const``.
"""
from __future__ import annotations

from marshmallow import fields

from botsvc.catalogue.validation import (
    INT64_MAX,
    INT64_MIN,
    ByteLength,
    FileId,
    FilePart,
    Int,
    MediaInput,
)
from botsvc.contract import FILE_ID, ecma

JSON_TYPES = {bool: "boolean", int: "integer", str: "string"}


def byte_limits(self, field: fields.Field, ret: dict, **kwargs) -> dict:
    limits = [v for v in field.validators if isinstance(v, ByteLength)]
    if not limits:
        return {}
    low, high = limits[0].min_bytes, limits[0].max_bytes
    attributes: dict = {}
    words = []
    if low is not None:
        attributes["minLength"] = -(-low // 4)   # 4 bytes at most per character
        words.append("Non-empty" if low == 1 else f"At least {low} bytes")
    if high is not None:
        attributes["maxLength"] = high
        words.append(f"{'at' if words else 'At'} most {high} bytes of UTF-8 (counted in "
                     "bytes, not characters)")
    return {**attributes, "description": joined(ret, ", ".join(words) + ".")}


def int64_bounds(self, field: fields.Field, ret: dict, **kwargs) -> dict:
    if not isinstance(field, Int):
        return {}
    return {"minimum": ret.get("minimum", INT64_MIN), "maximum": ret.get("maximum", INT64_MAX)}


def file_references(self, field: fields.Field, ret: dict, **kwargs) -> dict:
    if isinstance(field, FilePart):
        return {"type": "string", "contentMediaType": "application/octet-stream",
                "description": joined(ret, "The file itself: a multipart/form-data file part.")}
    if isinstance(field, FileId):
        also = (" In a multipart request, the file itself instead."
                if isinstance(field, MediaInput) else "")
        return {"pattern": ecma(FILE_ID),
                "description": joined(ret, "A file_id of a clean file of this bot (48 "
                                            "lowercase hex); URLs and paths are not accepted."
                                       + also)}
    return {}


def ecma_patterns(self, field: fields.Field, ret: dict, **kwargs) -> dict:
    return {"pattern": ecma(ret["pattern"])} if "pattern" in ret else {}


def constants(self, field: fields.Field, ret: dict, **kwargs) -> dict:
    if not isinstance(field, fields.Constant):
        return {}
    return {"type": JSON_TYPES[type(field.constant)], "const": field.constant}


ATTRIBUTE_FUNCTIONS = (byte_limits, int64_bounds, file_references, ecma_patterns, constants)


def install(converter) -> None:
    for function in ATTRIBUTE_FUNCTIONS:
        converter.add_attribute_function(function)


def joined(ret: dict, sentence: str) -> str:
    """The field's own description (its metadata), then the rule."""
    before = ret.get("description", "").rstrip()
    if not before:
        return sentence
    return f"{before} {sentence}" if before.endswith(".") else f"{before}. {sentence}"
