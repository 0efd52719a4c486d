"""The gunicorn entry point: ``gunicorn -c app/gunicorn_conf.py wsgi:app``.

Imported in each worker after the fork (no --preload), so every worker opens
its own database connections and starts its own scheduler thread.
"""
import logging

from app import create_app

logging.basicConfig(level=logging.INFO, format="%(asctime)s %(process)d %(levelname)s %(name)s: %(message)s")
app = create_app(start_worker=True)
