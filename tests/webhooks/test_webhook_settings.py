"""BOTSVC_WEBHOOK_CA_BUNDLE: CA certificates trusted for webhook receivers in
addition to certifi's bundle, checked when the service starts."""
from __future__ import annotations

import pytest

from botsvc.config import Settings


def settings(tmp_path, **env):
    return Settings.from_env({"BOTSVC_DATA_DIR": str(tmp_path / "data"), **env})


def test_unset_means_certifi_alone(tmp_path):
    assert settings(tmp_path).webhook_ca_bundle is None
    assert settings(tmp_path, BOTSVC_WEBHOOK_CA_BUNDLE="").webhook_ca_bundle is None


def test_a_pem_file_is_accepted_as_an_absolute_path(tmp_path, ca_file, monkeypatch):
    monkeypatch.chdir(tmp_path)
    relative = "test-ca.pem"
    assert ca_file.endswith(relative)
    assert settings(tmp_path, BOTSVC_WEBHOOK_CA_BUNDLE=relative).webhook_ca_bundle == ca_file


@pytest.mark.parametrize("content", [None, b"", b"not a certificate\n"])
def test_a_missing_or_unusable_file_stops_the_start(tmp_path, content):
    path = tmp_path / "bundle.pem"
    if content is not None:
        path.write_bytes(content)
    with pytest.raises(SystemExit, match="BOTSVC_WEBHOOK_CA_BUNDLE"):
        settings(tmp_path, BOTSVC_WEBHOOK_CA_BUNDLE=str(path))
