"""The method catalogue: every method of /v2 and of /manage/v1 is one
``Method`` entry, registered by its group module (``api_method`` in
app/botsvc/api/registry.py, ``operator_method`` in app/botsvc/manage/dispatch.py).

An entry is the contract of one method as data: its request schema (fields
from app/botsvc/catalogue/validation.py), its result (a marshmallow field from app/botsvc/catalogue/results.py
describing ``result``), the error codes it can answer beyond those every
method of its surface can, and a one-line summary. Both dispatchers validate
with ``validate_request``; the OpenAPI document (app/botsvc/openapi/) and the
``botsvc`` commands read the same entries, so none of them can drift.
"""
from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass
from functools import cached_property
from typing import Any

from marshmallow import Schema, fields

from botsvc.catalogue.body import RequestBody, coerce_form_values
from botsvc.catalogue.validation import FilePart, MediaInput, load
from botsvc.errors import ErrorCode, invalid


@dataclass(frozen=True)
class Method:
    name: str
    handler: Callable
    schema: Schema | None          # the request; None: no parameters at all
    result: fields.Field | None    # describes ``result`` of a success
    errors: tuple[ErrorCode, ...]  # beyond the codes of every method of the surface
    summary: str
    group: str                     # the module that defines it: its tag in the document
    # /v2 only. Rate-limit buckets beyond "api", which every method consumes.
    buckets: tuple[str, ...] = ()
    # Slow work (media tools, DNS) run outside the write transaction, before handler.
    prepare: Callable | None = None
    # check_references(conn, bot_id, params): what the parameters refer to
    # (file_ids) is this bot's and usable, checked without a recipient, so that
    # createBroadcast refuses a bad payload even with no member to try it on.
    check_references: Callable | None = None
    # send_to_many(call, chats) -> [Message]: what the handler does, for many
    # active chats at once (rows read in the caller's transaction, the
    # parameters without chat_id), as a broadcast's batch delivers them.
    send_to_many: Callable | None = None
    # /v2 only. What a success changes in a chat, as its user sees it: "send"
    # (its result is the Message or Messages sent), "edit" (the Message as it
    # became), "delete" (message_id or message_ids) or "answer" (a click's
    # answer). An exported conversation's reactions are these methods' calls.
    reaction: str | None = None
    # /manage/v1 only. Exists only with BOTSVC_TEST_TOOLS=1.
    test_tool: bool = False

    @cached_property
    def file_fields(self) -> tuple[str, ...]:
        """Parameters that take a multipart file part (read off the schema
        once: the dispatcher asks on every call)."""
        if self.schema is None:
            return ()
        return tuple(name for name, field in self.schema.fields.items()
                     if isinstance(field, (FilePart, MediaInput)))

    @cached_property
    def secret_fields(self) -> tuple[str, ...]:
        """Parameters that are credentials (``metadata={"secret": True}`` on
        the field, the one place a secret is named): the call log keeps
        ``[secret]`` in their place."""
        if self.schema is None:
            return ()
        return tuple(name for name, field in self.schema.fields.items()
                     if field.metadata.get("secret"))


class Catalogue(dict[str, Method]):
    """The methods of one surface (``/v2`` or ``/manage/v1``) by their
    case-sensitive names."""

    def __init__(self, prefix: str):
        super().__init__()
        self.prefix = prefix

    def register(self, name: str, schema: Schema | None = None, *, result=None,
                 errors: tuple[ErrorCode, ...] = (), summary: str = "", **extra: Any):
        """A decorator that enters ``handler`` as method ``name``. ``result`` is
        a marshmallow field, or a schema (class or instance) for an object."""
        def enter(handler: Callable) -> Callable:
            if name in self:
                raise RuntimeError(f"method {name} registered twice")
            self[name] = Method(name, handler, schema, _as_field(result), tuple(errors),
                                summary, handler.__module__.rsplit(".", 1)[-1], **extra)
            return handler
        return enter


def _as_field(result) -> fields.Field | None:
    if isinstance(result, Schema) or (isinstance(result, type) and issubclass(result, Schema)):
        return fields.Nested(result)
    return result


def validate_request(method: Method, body: RequestBody) -> dict:
    """The one validation step of both surfaces, in order: a body that did not
    parse (INVALID_JSON), file parts the method does not take, then the
    method's schema, form values being read as JSON where the field is not a
    string. Returns the loaded parameters or raises the contract's error."""
    if body.invalid is not None:
        raise body.invalid
    unexpected = body.files and set(body.files) - set(method.file_fields)
    if unexpected:
        name = sorted(unexpected)[0]
        raise invalid(name, f"Parameter {name} does not accept a file upload")
    params = body.params
    if body.is_form and method.schema is not None:
        params = coerce_form_values(method.schema.fields, params)
    if body.files:
        params = {**params, **body.files}
    if method.schema is None:
        if params:
            name = sorted(params)[0]
            raise invalid(name, f"Unknown parameter: {name}")
        return {}
    return load(method.schema, params)
