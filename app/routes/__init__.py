"""The installation's own HTTP routes beside the two APIs: the download route
(SPEC "Download route"), /healthz and /readyz, and /metrics (DECISIONS §8).
One module each; each is a blueprint the factory registers."""
from app.routes import download, health, metrics

BLUEPRINTS = (download.bp, health.bp, metrics.bp)
