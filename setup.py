"""The package's build rules that setup.cfg cannot say.

- ``app/`` is the source root (a src layout whose root is named ``app``) and
  the package lives in ``app/botsvc/``: the folder is named as the import, so
  an editor, a type checker or import-linter finds ``botsvc.x`` at
  ``app/botsvc/x.py`` with nothing but ``app/`` on its path, and an editable
  install is a plain path entry (``app/``). Nothing named ``app`` is ever
  installed, so a bot project's own ``app/`` (the commonest layout of a Flask
  or bot project) keeps its name beside botsvc.
- The migrations, plain SQL kept at the top of the repository
  (``migrations/``), ship inside the package as ``botsvc/sql_migrations/``, so
  that an installed botsvc (a wheel, ``pip install git+...``) finds its schema.
  botsvc/migrations.py reads them there, or from ``migrations/`` in a checkout
  (an editable install among them). They are copied in by the build
  (``BuildWithMigrations``) rather than mapped as a package of their own: a
  second ``package_dir`` entry outside the source root would turn the
  editable install from a path entry into an import hook that tools cannot
  follow. The sdist carries them (``SdistWithMigrations``).
- The development kit, ``app/botsvc/devkit/`` (``botsvc.devkit``: servers with
  the suite's defaults, webhook receivers, slow clients, the nginx front door),
  is shared by tests/ and scripts/ so that neither reaches into the other;
  a checkout imports it, the wheel leaves it out.

Everything else is in setup.cfg.
"""
from pathlib import Path

from setuptools import find_packages, setup
from setuptools.command.build_py import build_py
from setuptools.command.sdist import sdist

SOURCE_ROOT = "app"
MIGRATIONS = sorted(str(path) for path in Path("migrations").glob("*.sql"))

# The development kit (app/botsvc/devkit/: what the test suite and scripts/
# both run) is for a checkout only; the wheel leaves it out.
DEVELOPMENT_ONLY = ["botsvc.devkit", "botsvc.devkit.*"]



class BuildWithMigrations(build_py):
    """The built package gets ``botsvc/sql_migrations/*.sql``."""

    def run(self):
        super().run()
        if self.editable_mode:   # the checkout reads migrations/ where it is
            return
        target = Path(self.build_lib) / "botsvc" / "sql_migrations"
        self.mkpath(str(target))
        for path in MIGRATIONS:
            self.copy_file(path, str(target / Path(path).name))


class SdistWithMigrations(sdist):
    """The sdist carries ``migrations/``, so a wheel built from it has them."""

    def make_release_tree(self, base_dir, files):
        super().make_release_tree(base_dir, [*files, *(m for m in MIGRATIONS if m not in files)])


setup(
    packages=find_packages(where=SOURCE_ROOT, include=["botsvc", "botsvc.*"],
                           exclude=DEVELOPMENT_ONLY),
    package_dir={"": SOURCE_ROOT},
    cmdclass={"build_py": BuildWithMigrations, "sdist": SdistWithMigrations},
)
