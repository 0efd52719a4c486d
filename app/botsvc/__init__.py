"""botsvc: a self-hosted bot messaging service (contract 2.0.0).

The package is layered, top down: a module imports from its own package and
from the layers below it, never above, and rooms on one layer do not import
each other. The layers are written once, as the import-linter contracts in
setup.cfg (``[importlinter:contract:layers]``, exhaustive: a new room of the
package goes there at its height); docs/DEVELOPING.md says why each layer
is where it is.

Nothing is imported here, so ``import botsvc.config`` stays cheap (gunicorn's
master reads its settings that way).
"""
