"""botsvc: a self-hosted bot messaging service (contract 2.0.0).

The package is layered, top down; a module imports only from its own layer's
lower neighbours (docs/DEVELOPING.md, held by the import-linter contracts in
setup.cfg):

- launchers: ``cli`` (the ``botsvc`` command), ``gunicorn_conf``, ``factory``
  (``create_app``);
- faces: ``routes`` (download, health, metrics), ``sandbox``, ``openapi``,
  ``testkit``, ``backup``;
- methods: ``manage`` (/manage/v1), then ``api`` (/v2);
- services: ``webhooks``, ``maintenance``, and the request plumbing
  (``catalogue``, ``body``, ``results``, ``validation``, ``file_response``);
- ``domain``: plain values and a connection, no Flask;
- infrastructure: ``jobs``, ``media``, ``idempotency``, ``limits``, ``auth``,
  ``db``, ``migrations``, ``clock``, ``metrics``, ``disk``, ``errors``,
  ``config``, ``contract``, ...

Nothing is imported here, so ``import botsvc.config`` stays cheap (gunicorn's
master reads its settings that way).
"""
