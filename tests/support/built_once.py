"""What never changes between the suite's apps, built once per process:
``built_once()`` (tests/conftest.py holds it for the whole session) makes
every Flask app parse each URL rule text once and compile its URL builders
on first use, and share Jinja's compiled templates. The suite makes some
2,000 apps; a server makes one per worker, so none of this is the
service's own code."""
from __future__ import annotations

import contextlib
import copy
import io
from collections.abc import Iterator

import pytest
from flask import Flask
from jinja2 import BytecodeCache
from werkzeug.routing import Rule


class RulesParsedOnce(Rule):
    """The suite makes some 2,000 apps, each adding its ~30 URL rules afresh;
    werkzeug parsed each rule and compiled two URL builders for it (from
    generated source) as it was added: some 10 ms of an app's 16 ms, though
    a test builds one URL at most. Here a rule text is parsed once per
    process (the parts, trace and converters it yields, copied to each rule
    that has it, each converter rebound to its own map) and a builder is
    compiled the first time it is used; matching, and the URLs built, stay
    werkzeug's own. Test-only: a server adds its rules once. Should werkzeug
    rename these private methods, the overrides are simply never called and
    the suite is slower, not wrong."""

    _parsed: dict = {}

    def _parse_rule(self, rule: str):
        key = (rule, tuple(self.map.converters.items()))
        found = self._parsed.get(key)
        if found is None:
            trace_from, named_before = len(self._trace), set(self._converters)
            parts = list(Rule._parse_rule(self, rule))   # its side effects on self, once
            self._parsed[key] = (parts, self._trace[trace_from:],
                                 {name: converter for name, converter in self._converters.items()
                                  if name not in named_before})
            return parts
        parts, trace, converters = found
        self._trace.extend(trace)
        for name, converter in converters.items():
            own = copy.copy(converter)
            own.map = self.map
            self._converters[name] = own
            self.arguments.add(name)
        return parts

    def _compile_builder(self, append_unknown: bool = True):
        compiled = None

        def build(rule, *args, **kwargs):
            nonlocal compiled
            if compiled is None:
                compiled = Rule._compile_builder(rule, append_unknown)
            return compiled(rule, *args, **kwargs)
        return build


class TemplatesCompiledOnce(BytecodeCache):
    """Jinja's own cache of compiled templates, in memory and shared by the
    suite's apps: each app has its own Jinja environment, which compiled
    every page it rendered again (a tenth of the sandbox's tests' time,
    measured). A template whose source changed is compiled afresh (the
    cache checks its checksum)."""

    def __init__(self):
        self._code: dict[str, bytes] = {}

    def load_bytecode(self, bucket) -> None:
        code = self._code.get(bucket.key)
        if code is not None:
            bucket.load_bytecode(io.BytesIO(code))

    def dump_bytecode(self, bucket) -> None:
        buffer = io.BytesIO()
        bucket.write_bytecode(buffer)
        self._code[bucket.key] = buffer.getvalue()


@contextlib.contextmanager
def built_once() -> Iterator[None]:
    templates = TemplatesCompiledOnce()
    create_jinja_environment = Flask.create_jinja_environment

    def jinja_environment(app):
        environment = create_jinja_environment(app)
        environment.bytecode_cache = templates
        return environment

    with pytest.MonkeyPatch.context() as patch:
        patch.setattr(Flask, "url_rule_class", RulesParsedOnce)
        patch.setattr(Flask, "create_jinja_environment", jinja_environment)
        yield
