"""The installation's own HTTP routes beside the two APIs: the download route,
/healthz and /readyz, and /metrics.
One module each; each is a blueprint the factory registers."""
from botsvc.routes import download, health, metrics

BLUEPRINTS = (download.bp, health.bp, metrics.bp)
