"""The baseline for scripts/bench: a bare JSON endpoint, same Flask, same
gunicorn configuration, no database."""
from flask import Flask, Response

app = Flask(__name__)


@app.post("/bare")
def bare() -> Response:
    return Response('{"ok":true,"result":true}', mimetype="application/json")
