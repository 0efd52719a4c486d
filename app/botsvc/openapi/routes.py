"""The document's shared parts (the failure envelope, security schemes,
headers) and the routes that are not catalogue methods, as data: the
download route and the installation's own routes (described here exactly as
the contract fixes them).

Written for client generators as well as for validators (docs/openapi.md):
every failure answer is the one ``Failure`` component, narrowed to the
operation's codes by keywords beside its ``$ref`` (OpenAPI 3.1 schemas are
JSON Schema 2020-12, so validators apply both; generators keep the one
type), and the codes are also said in the operation's description, which
generators copy into their docstrings; a success of a shared result type is
one ``Ok<Result>`` component.
"""
from __future__ import annotations

from botsvc.contract import KEY, SHA256, ecma
from botsvc.errors import ErrorCode

JSON = "application/json"
FAILURE_REF = {"$ref": "#/components/schemas/Failure"}
ERROR_CODES = "x-error-codes"   # each failure answer's codes, for tools that read them
OPERATOR_TAG = {"name": "operator", "description": "The operator API: the "
                "bot manager and simulated users. The `botsvc` command runs the same methods."}
INSTALLATION_TAG = {"name": "installation", "description": "The installation's own routes: "
                    "health, readiness, metrics and this document."}

SECURITY_SCHEMES = {
    "bot": {"type": "http", "scheme": "bearer", "description": "A bot token, `<bot id>:<43 "
            "URL-safe base64 characters>`, from createBot or rotateToken."},
    "admin": {"type": "http", "scheme": "bearer",
              "description": "The operator token: the setting BOTSVC_ADMIN_TOKEN."},
    "metrics": {"type": "http", "scheme": "bearer",
                "description": "The setting BOTSVC_METRICS_TOKEN (the admin token works too)."},
}
IDEMPOTENCY_KEY = {
    "name": "Idempotency-Key", "required": False,
    "schema": {"type": "string", "pattern": ecma(KEY)},
    "description": "Replays the stored answer of a call with the same key, method and "
                   "parameters (24 hours, per bot); other parameters under the same key are "
                   "IDEMPOTENCY_CONFLICT."}
REQUEST_ID_HEADER = {
    "required": True, "schema": {"type": "string", "pattern": ecma(KEY)},
    "description": "The request's own X-Request-Id when it matches the pattern, else a new "
                   "random one; the request's log lines carry it."}
REQUEST_ID_REF = {"$ref": "#/components/headers/RequestId"}
REPLAYED_HEADER = {"description": "`true` on a replayed answer",
                   "schema": {"type": "string", "const": "true"}}
NO_PARAMETERS = {"type": "object", "additionalProperties": False,
                 "description": "No parameters: `{}` or an empty body."}
FAILURE = {
    "type": "object", "required": ["ok", "error_code", "description", "parameters"],
    "additionalProperties": False,
    "properties": {
        "ok": {"const": False},
        "error_code": {"type": "string", "enum": [code.value for code in ErrorCode]},
        "description": {"type": "string", "description": "for people; never a token, a "
                                                         "stack trace or a disk path"},
        "parameters": {"$ref": "#/components/schemas/ErrorParameters"}}}
HEADERS_OF_STATUS = {
    "429": {"Retry-After": {"required": True, "description": "= parameters.retry_after",
                            "schema": {"type": "integer", "minimum": 1}}},
    "413": {"Connection": {"description": "`close`: the rest of the body is not read",
                           "schema": {"type": "string"}}},
}


def error_parameters(reasons: list[str]) -> dict:
    return {"type": "object", "description": "What the failure is about; other keys may "
            "appear (such as `chat_id`, `index`, `message_id`, `limit`).", "properties": {
                "field": {"type": "string", "description": "the offending top-level "
                          "parameter (INVALID_PARAMETER, and the not-found codes)"},
                "path": {"type": "string", "description": "the place inside it, as "
                         "reply_markup.inline_keyboard.0.1.text"},
                "reason": {"type": "string", "enum": reasons,
                           "description": "the policy that refused the value"},
                "dependency": {"type": "string", "description": "DEPENDENCY_UNAVAILABLE: the "
                               "tool (clamav, ffmpeg, ffprobe, pikepdf, libmagic, prlimit)"},
                "retry_after": {"type": "integer", "minimum": 1,
                                "description": "RATE_LIMITED and IDEMPOTENCY_CONFLICT: seconds"},
                "in_progress": {"type": "boolean"},
                # A boolean, not a const: openapi-python-client 0.29 renders an
                # optional const into Python that does not parse.
                "injected": {"type": "boolean", "description": "`true`: the failure was "
                             "asked for with injectFault (BOTSVC_TEST_TOOLS=1)"}}}


def with_request_ids(document: dict) -> dict:
    """Every answer of every operation carries X-Request-Id."""
    for operations in document["paths"].values():
        for operation in operations.values():
            for answer in operation["responses"].values():
                answer.setdefault("headers", {})["X-Request-Id"] = REQUEST_ID_REF
    return document


def ok_envelope(result: dict) -> dict:
    return {"type": "object", "required": ["ok", "result"], "additionalProperties": False,
            "properties": {"ok": {"const": True}, "result": result}}


def success(result: dict) -> dict:
    return {"description": "Success", "content": {JSON: {"schema": ok_envelope(result)}}}


def shared_success(result: dict) -> tuple[str, dict] | None:
    """(component name, envelope) for a result many operations share: one
    ``$ref``'d type (``OkMessage``), a list of one (``OkMessageList``) or
    ``true`` (``OkTrue``), so that a generator makes one type of each, not
    one per operation. None for a result of its own."""
    if "$ref" in result:
        return f"Ok{result['$ref'].rsplit('/', 1)[1]}", ok_envelope(result)
    if result.get("type") == "array" and "$ref" in result.get("items", {}):
        return f"Ok{result['items']['$ref'].rsplit('/', 1)[1]}List", ok_envelope(result)
    if result.get("const") is True:
        return "OkTrue", ok_envelope(result)
    return None


def _codes_by_status(codes) -> dict[str, list[str]]:
    by_status: dict[str, list[str]] = {}
    for code in codes:
        by_status.setdefault(str(code.http_status), []).append(code.value)
    return dict(sorted(by_status.items()))


def failures(codes) -> dict:
    """The failure answers of an operation: one per HTTP status, each the
    ``Failure`` envelope narrowed to the codes the operation can answer
    with it (``$ref`` with sibling keywords, not ``allOf``: a generator
    keeps the one type instead of making one per answer)."""
    answers = {}
    for status, names in _codes_by_status(codes).items():
        answer = {"description": ", ".join(names), ERROR_CODES: names,
                  "content": {JSON: {"schema": {
                      **FAILURE_REF, "properties": {"error_code": {"enum": names}}}}}}
        if status in HEADERS_OF_STATUS:
            answer["headers"] = dict(HEADERS_OF_STATUS[status])
        answers[status] = answer
    return answers


def failures_text(codes) -> str:
    """The codes by status as a sentence, for the operation's description."""
    return "Fails with (HTTP status: error_code): " + "; ".join(
        f"{status}: {', '.join(names)}" for status, names in _codes_by_status(codes).items()
    ) + "."


def _without_body(answers: dict) -> dict:
    """HEAD: the same statuses and headers, no content."""
    return {status: {k: v for k, v in answer.items() if k != "content"}
            for status, answer in answers.items()}


# -- the download route ------------------------------------------------------------

def _query(name: str, description: str, schema: dict | None = None) -> dict:
    return {"name": name, "in": "query", "required": False, "description": description,
            "schema": schema or {"type": "string"}}


FILE_HEADERS = {name: {"schema": {"type": "string"}, "description": description}
                for name, description in (
                    ("Content-Type", "the stored MIME type"),
                    ("Content-Length", "bytes in this answer"),
                    ("Content-Disposition", "attachment, with a safe file name"),
                    ("ETag", "the quoted SHA-256 of the file"),
                    ("Accept-Ranges", "bytes"),
                    ("X-Content-Type-Options", "nosniff"))}


def _download(method: str) -> dict:
    # The stored MIME type of the file, whatever it is.
    body = {"content": {"*/*": {"schema": {"type": "string", "description": "the bytes"}}}}
    answers = {
        "200": {"description": "The whole file", "headers": FILE_HEADERS, **body},
        "206": {"description": "The one byte range asked for", **body, "headers": {
            **FILE_HEADERS, "Content-Range": {"required": True, "schema": {"type": "string"},
                                              "description": "bytes FIRST-LAST/SIZE"}}},
        **failures([ErrorCode.INVALID_PARAMETER, ErrorCode.UNAUTHORIZED,
                    ErrorCode.BOT_DISABLED, ErrorCode.FILE_NOT_FOUND,
                    ErrorCode.RANGE_NOT_SATISFIABLE, ErrorCode.INTERNAL_ERROR,
                    ErrorCode.PLATFORM_DISABLED])}
    answers["416"]["headers"] = {"Content-Range": {
        "required": True, "schema": {"type": "string"}, "description": "bytes */SIZE"}}
    if method == "head":
        answers = _without_body(answers)
    return {
        "operationId": f"download_{method}", "tags": ["files"],
        "summary": "A file's bytes: bearer token and file_id, or the signed link of getFile",
        "description": "Bearer mode: `Authorization: Bearer <bot token>` and `file_id` (a file "
                       "of another bot is FILE_NOT_FOUND). Signed mode: `id`, `exp` and `sig` "
                       "exactly as getFile's download_url has them (no token; a bad or "
                       "expired link is UNAUTHORIZED). One byte range is a 206; anything "
                       "else in Range is a 416. HEAD sends the headers only.",
        "security": [{"bot": []}, {}],
        "parameters": [
            _query("file_id", "bearer mode: one of this bot's file_ids"),
            _query("id", "signed mode: the file_id in the link"),
            _query("exp", "signed mode: expiry, Unix seconds", {"type": "integer"}),
            _query("sig", "signed mode: the link's signature",
                   {"type": "string", "pattern": ecma(SHA256)}),
            {"name": "Range", "in": "header", "required": False, "schema": {"type": "string"},
             "description": "one byte range, e.g. bytes=0-1023"},
            {"name": "If-Range", "in": "header", "required": False,
             "schema": {"type": "string"}, "description": "the ETag the client holds"}],
        "responses": answers}


# -- the installation's routes -------------------------------------------------

CHECK_RESULT = {"type": "string", "description": "`ok` or a snake_case reason"}
CHECKS = {"type": "object", "required": ["database", "media", "disk"],
          "properties": {"database": CHECK_RESULT, "media": CHECK_RESULT, "disk": CHECK_RESULT}}


def _route(operation_id: str, summary: str, answers: dict,
           security: list | None = None) -> dict:
    return {"get": {"operationId": operation_id,
                    "tags": [INSTALLATION_TAG["name"]], "summary": summary,
                    "security": security or [{}], "responses": {
                        **answers, **failures([ErrorCode.INTERNAL_ERROR])}}}


def _plain(description: str, media_type: str, schema: dict) -> dict:
    return {"description": description, "content": {media_type: {"schema": schema}}}


INSTALLATION_ROUTES = {
    "/healthz": _route("healthz", "Liveness, whenever the process answers", {
        "200": success({"type": "object", "required": ["status"], "additionalProperties": False,
                        "properties": {"status": {"const": "alive"}}})}),
    "/readyz": _route("readyz", "Ready, degraded (media only) or not ready", {
        "200": success({"type": "object", "required": ["status", "checks"],
                        "additionalProperties": False, "properties": {
                            "status": {"enum": ["ready", "degraded"]}, "checks": CHECKS}}),
        **failures([ErrorCode.NOT_READY])}),
    "/metrics": _route("metrics", "Prometheus text of the whole installation", {
        "200": _plain("Prometheus text format", "text/plain", {"type": "string"}),
        **failures([ErrorCode.UNAUTHORIZED, ErrorCode.METHOD_NOT_FOUND])},
        security=[{"metrics": []}, {"admin": []}]),
    "/openapi.json": _route("openapi", "This document", {
        "200": _plain("The OpenAPI 3.1 document", JSON, {"type": "object"})}),
    "/docs": _route("docs", "This document as a page (no asset from outside the service)", {
        "200": _plain("An HTML page", "text/html", {"type": "string"})}),
}


def other_paths() -> dict:
    return {"/download.php": {"get": _download("get"), "head": _download("head")},
            **INSTALLATION_ROUTES}
