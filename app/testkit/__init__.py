"""The testing kit: a typed client for the operator API and /v2
(``app.testkit.client``), a real server for a test session
(``app.testkit.server``) and the pytest plugin built on them
(``app.testkit.plugin``, registered as the ``pytest11`` entry point ``botsvc``)."""
