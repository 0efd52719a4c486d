"""The package's one build rule that setup.cfg cannot say: the migrations,
plain SQL kept at the top of the repository (``migrations/``), ship inside
the package as ``app/sql_migrations/``, so that an installed botsvc (a wheel,
``pip install git+...``) finds its schema. app/migrations.py reads them
there, or from ``migrations/`` in a checkout. Everything else is in setup.cfg.
"""
from setuptools import find_packages, setup

setup(
    packages=[*find_packages(include=["app", "app.*"]), "app.sql_migrations"],
    package_dir={"app.sql_migrations": "migrations"},
)
