"""Fixtures of the W&B wire-compatibility suites (helpers in compat_helpers.py)."""
import shutil
import subprocess

import pytest

from .compat_helpers import JS_DIR, WandbWire


@pytest.fixture
def wire(server):
    return WandbWire(server.url, server.config["api_key"])


@pytest.fixture
def entity(api):
    status, viewer = api.get("/api/v1/viewer")
    assert status == 200
    return viewer["entity"]


@pytest.fixture(scope="session")
def js_sdk():
    """Installs the JS SDK (tests/compat/js/setup.sh) and returns the node binary."""
    node = shutil.which("node")
    npm = shutil.which("npm")
    if node is None or npm is None:
        pytest.fail("node and npm are needed for the JS SDK tests (Debian: apt-get install nodejs npm)")
    proc = subprocess.run(["bash", str(JS_DIR / "setup.sh")], capture_output=True, text=True,
                          timeout=600)
    if proc.returncode != 0:
        pytest.fail(f"tests/compat/js/setup.sh failed:\n{proc.stdout}\n{proc.stderr}")
    return node
