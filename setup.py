"""The package's build rules that setup.cfg cannot say.

- The code lives in the folder ``app/`` (the repository's layout) and installs
  as the package ``botsvc``: ``package_dir`` maps the one name to the other, so
  nothing named ``app`` is ever installed. A bot project's own ``app/`` (the
  commonest layout of a Flask or bot project) keeps its name beside botsvc.
- The migrations, plain SQL kept at the top of the repository
  (``migrations/``), ship inside the package as ``botsvc/sql_migrations/``, so
  that an installed botsvc (a wheel, ``pip install git+...``) finds its schema.
  botsvc/migrations.py reads them there, or from ``migrations/`` in a checkout.

- The development kit, ``app/devkit/`` (``botsvc.devkit``: servers with the
  suite's defaults, webhook receivers, slow clients, the nginx front door),
  is shared by tests/ and scripts/ so that neither reaches into the other;
  a checkout imports it, the wheel leaves it out.

Everything else is in setup.cfg.
"""
from setuptools import find_packages, setup

CODE = "app"        # the folder
PACKAGE = "botsvc"  # its import name

# The development kit (app/devkit/: what the test suite and scripts/ both
# run) is for a checkout only; the wheel leaves it out.
DEVELOPMENT_ONLY = [f"{CODE}.devkit", f"{CODE}.devkit.*"]

packages = [PACKAGE + name[len(CODE):]
            for name in find_packages(include=[CODE, CODE + ".*"], exclude=DEVELOPMENT_ONLY)]

setup(
    packages=[*packages, f"{PACKAGE}.sql_migrations"],
    package_dir={PACKAGE: CODE, f"{PACKAGE}.sql_migrations": "migrations"},
)
