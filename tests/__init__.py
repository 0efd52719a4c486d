"""The suite: one folder per room of app/ (api, media, webhooks, sandbox, ops,
infra, openapi, testing_tools), shared helpers in tests/support. Helpers are
imported by their full name (``from tests.support.contract import ...``).

tests/examples is not part of this package: it is what a bot developer writes,
run as they would run it.
"""
