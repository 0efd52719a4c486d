"""GET /docs in a real browser (Debian's chromium, headless): Swagger UI
renders every operation of the document, and the browser reports nothing:
no script, style, image or request refused by the page's CSP (which allows
only the service itself), no error."""
from __future__ import annotations

import re
import shutil
import subprocess

import pytest

from botsvc.devkit.servers import running_server
from tests.support.conformance import document


@pytest.mark.server
@pytest.mark.browser
def test_the_docs_page_renders_everything_and_nothing_is_refused(tmp_path):
    chromium = shutil.which("chromium")
    assert chromium, "scripts/bootstrap installs Debian's chromium"
    with running_server(tmp_path) as server:
        done = subprocess.run(
            [chromium, "--headless=new", "--no-sandbox", "--disable-gpu", "--no-first-run",
             f"--user-data-dir={tmp_path / 'profile'}", "--enable-logging=stderr", "--v=1",
             "--virtual-time-budget=20000", "--dump-dom", f"{server.base_url}/docs"],
            capture_output=True, text=True, timeout=120)
    rendered = set(re.findall(r'data-path="([^"]+)"', done.stdout))
    assert rendered == set(document()["paths"]), done.stdout[:2000]
    # Every console message (a CSP refusal is one) is a failure of the page.
    console = [line for line in done.stderr.splitlines() if ":CONSOLE" in line]
    assert console == []
