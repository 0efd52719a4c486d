"""A checkout's gunicorn entry point: ``gunicorn -c app/botsvc/gunicorn_conf.py wsgi:app``.
``botsvc serve`` (the one way to start) names ``botsvc.factory:worker_app()``
itself; this file only keeps that older command line working.

Imported in each worker after the fork (no --preload), so every worker opens
its own database connections and starts its own scheduler thread.
"""
from botsvc.factory import worker_app

app = worker_app()
