"""Fixtures of the sandbox tests: a signed-in person, and uploads scanned with
the offline signature database."""
from __future__ import annotations

import pytest

from app.media import build_test_signature_db
from tests.sandbox.sandbox_client import Person


@pytest.fixture
def person(client):
    """Signed in to the sandbox."""
    someone = Person(client)
    assert someone.sign_in().status_code == 303
    return someone


@pytest.fixture(scope="session")
def clamav_db(tmp_path_factory) -> str:
    return build_test_signature_db(str(tmp_path_factory.mktemp("clamdb")))


@pytest.fixture
def scanner_settings(clamav_db) -> dict:
    """Uploads scan with the offline EICAR database (no network here)."""
    return {"clamav_db": clamav_db, "clamd_socket": None}
