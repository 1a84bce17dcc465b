"""Test set-up: no network beyond loopback, offline models, and shared fixtures.

Tests reach only loopback addresses: any other connection attempt fails loudly, so a test can never
depend on a hosted API by accident.
"""

from __future__ import annotations

import ipaddress
import os
import socket
from pathlib import Path

import pytest

os.environ["HF_HUB_OFFLINE"] = "1"
os.environ["TRANSFORMERS_OFFLINE"] = "1"
os.environ["ANONYMIZED_TELEMETRY"] = "False"
os.environ["TOKENIZERS_PARALLELISM"] = "false"
for _name in list(os.environ):  # a developer's own settings must not leak into tests
    if _name.startswith("CAFBOT_") or _name == "OPENAI_API_KEY":
        del os.environ[_name]

_real_connect = socket.socket.connect


def _loopback_only(self: socket.socket, address) -> None:
    host = address[0] if isinstance(address, tuple) else address
    if self.family in (socket.AF_INET, socket.AF_INET6):
        try:
            allowed = ipaddress.ip_address(host).is_loopback
        except ValueError:
            allowed = host == "localhost"
        if not allowed:
            raise ConnectionRefusedError(f"tests may only reach loopback addresses, not {host!r}")
    return _real_connect(self, address)


socket.socket.connect = _loopback_only  # type: ignore[method-assign]

REPO = Path(__file__).resolve().parent.parent


@pytest.fixture(autouse=True)
def _isolated_cwd(tmp_path, monkeypatch):
    """Each test runs in its own directory, so no cafbot.toml, .env or data dir is shared."""
    monkeypatch.chdir(tmp_path)


@pytest.fixture
def settings(tmp_path):
    from app.config import Settings

    return Settings(data_dir=tmp_path / "data")


@pytest.fixture(scope="session")
def shared_data_dir(tmp_path_factory) -> Path:
    """One index of the default knowledge base for the whole session (built once, reused)."""
    return tmp_path_factory.mktemp("shared-data")


@pytest.fixture(scope="session")
def default_identifier(shared_data_dir):
    from app.config import Settings
    from app.retrieval import open_identifier

    return open_identifier(Settings(data_dir=shared_data_dir))
