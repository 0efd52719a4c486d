"""Webhooks. Target validation and the delivery transport (addresses, urls,
secret_token, transport) are pure library code: no Flask, no database.
``delivery`` is the worker that drains the queue with them; the queue state
lives in app/botsvc/domain/webhooks.py and the methods in app/botsvc/api/webhooks.py."""
