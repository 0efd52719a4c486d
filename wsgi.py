"""The gunicorn entry point: ``gunicorn -c app/gunicorn_conf.py wsgi:app``.

Imported in each worker after the fork (no --preload), so every worker opens
its own database connections and starts its own scheduler thread.
"""
from app import logs
from app.config import Settings
from app.factory import create_app

settings = Settings.from_env()
logs.configure(settings.log_format)
app = create_app(settings, start_worker=True)
