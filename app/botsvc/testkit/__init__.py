"""The testing kit: a typed client for the operator API and /v2
(``botsvc.testkit.client``), a real server for a test session
(``botsvc.testkit.server``) and the pytest plugin built on them
(``botsvc.testkit.plugin``, registered as the ``pytest11`` entry point ``botsvc``)."""
