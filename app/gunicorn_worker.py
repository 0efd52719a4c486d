"""botsvc's gunicorn worker: gthread, plus what its connections need.

- The app can close the connection for real (app/wire.py): gunicorn drops a
  ``Connection: close`` header the app sets, so the request being served is
  handed to the app through a thread-local, where ``close_connection`` sets
  gunicorn's own flag (the one ``max_requests`` uses).
"""
from __future__ import annotations

from gunicorn.workers.gthread import ThreadWorker

from app import wire


class BotsvcWorker(ThreadWorker):
    def handle_request(self, req, conn):
        wire.current.request = req
        try:
            return super().handle_request(req, conn)
        finally:
            wire.current.request = None
