"""Fixtures of the sandbox tests: a signed-in person, and uploads scanned with
the offline signature database."""
from __future__ import annotations

import pytest

from tests.sandbox.sandbox_client import Person


@pytest.fixture
def person(client):
    """Signed in to the sandbox."""
    someone = Person(client)
    assert someone.sign_in().status_code == 303
    return someone


@pytest.fixture
def scanner_settings(offline_scanner) -> dict:
    return offline_scanner
