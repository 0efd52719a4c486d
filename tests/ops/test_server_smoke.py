import pytest
import requests

from botsvc.devkit.servers import running_server

pytestmark = pytest.mark.server


def test_real_server_answers_with_the_envelope(tmp_path):
    with running_server(tmp_path) as server:
        created = server.operator("createBot", username="smoke_bot")
        response = requests.post(f"{server.base_url}/v2/getMe", json={},
                                 headers={"Authorization": f"Bearer {created['token']}"})
        assert response.status_code == 200
        assert response.json() == {"ok": True, "result": created["bot"]}
