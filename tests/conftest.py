"""Test set-up: no network beyond loopback, offline models, and shared fixtures.

Tests reach only loopback addresses: any other connection attempt fails loudly, so a test can never
depend on a hosted API by accident.
"""

from __future__ import annotations

import ipaddress
import os
import socket
from contextlib import contextmanager
from pathlib import Path

import pytest

os.environ["HF_HUB_OFFLINE"] = "1"
os.environ["TRANSFORMERS_OFFLINE"] = "1"
os.environ["ANONYMIZED_TELEMETRY"] = "False"
os.environ["TOKENIZERS_PARALLELISM"] = "false"
for _name in list(os.environ):  # a developer's own settings must not leak into tests; the test
    # suite's own switches (CAFBOT_TEST_*, set by .ci/run) are not settings and stay
    if (_name.startswith("CAFBOT_") and not _name.startswith("CAFBOT_TEST_")) or _name == "OPENAI_API_KEY":
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


@pytest.fixture(autouse=True)
def _empty_artefact_cache(tmp_path, monkeypatch):
    """No test copies a learned check from, or leaves one in, the developer's artefact cache."""
    from app.core.learning import artefact_cache

    monkeypatch.setattr(artefact_cache, "CACHE_DIR", tmp_path / "artefact-cache")


@pytest.fixture
def settings(tmp_path):
    from app.core.config import Settings

    return Settings(data_dir=tmp_path / "data")


@pytest.fixture(scope="session")
def shared_data_dir(tmp_path_factory) -> Path:
    """One index of the default knowledge base for the whole session (built once, reused)."""
    return tmp_path_factory.mktemp("shared-data")


@pytest.fixture(scope="session")
def embedder():
    """The real MiniLM embedder, loaded once for the session (slow tests only)."""
    from app.core.embeddings import Embedder

    return Embedder()


@pytest.fixture(scope="session")
def evaluation_messages() -> list[str]:
    """Every message the evaluation sets ask (answer sets with their earlier messages, retrieval
    questions): what nothing the product learns from may nearly repeat."""
    import json

    root = Path(__file__).resolve().parents[1] / "scenarios"
    messages = []
    for file in [*root.glob("answers/*.jsonl"), root / "retrieval" / "questions.jsonl"]:
        for line in file.read_text(encoding="utf-8").splitlines():
            if line.strip():
                case = json.loads(line)
                messages += [case["question"], *case.get("history", [])]
    return messages


@pytest.fixture(scope="session")
def embedding_resources(embedder, tmp_path_factory):
    """Tier-0 resources with the real embedder and learned checks (trained once per session)."""
    from judges.local.resources import Resources

    return Resources(embedder)


@pytest.fixture(scope="session")
def default_identifier(shared_data_dir, embedder):
    from app.core.config import Settings
    from app.retrieval import open_identifier

    return open_identifier(Settings(data_dir=shared_data_dir), embedder)


@pytest.fixture(scope="session")
def knowledge_base():
    from app.core.config import DEFAULT_KNOWLEDGE_BASE
    from app.kb.loader import load_knowledge_base

    return load_knowledge_base(DEFAULT_KNOWLEDGE_BASE)


@contextmanager
def bot_factory(tmp_path: Path, services_for):
    """Yields make(chat=…, data_dir=…, **settings) -> Chatbot over `services_for(settings, chat)`;
    every chatbot made is closed at the end."""
    from app.core.config import Settings
    from app.session import Chatbot

    bots = []

    def make(*, chat=None, data_dir=None, **settings_values):
        settings = Settings(data_dir=data_dir or tmp_path / "data", **settings_values)
        bot = Chatbot(settings, services_for(settings, chat))
        bots.append(bot)
        return bot

    try:
        yield make
    finally:
        for bot in bots:
            bot.close()


@pytest.fixture
def make_bot(tmp_path, default_identifier, embedder):
    """Chatbots over the real index, embedder, graph, filter and stores (slow tests)."""
    from app.graph.services import Services

    def services_for(settings, chat):
        return Services.from_settings(settings, identifier=default_identifier.with_settings(settings),
                                      embedder=embedder, chat=chat)

    with bot_factory(tmp_path, services_for) as make:
        yield make


@pytest.fixture
def fast_bot(tmp_path, knowledge_base):
    """Chatbots over the real graph, filter, checkpointer and store, with the hashing embedder and
    the keyword identifier instead of MiniLM and the index: whole turns in milliseconds."""
    from app.graph.services import Services
    from tests.fakes import HashingEmbedder, KeywordIdentifier

    def services_for(settings, chat):
        return Services.from_settings(settings, embedder=HashingEmbedder(),
                                      identifier=KeywordIdentifier(knowledge_base), chat=chat)

    with bot_factory(tmp_path, services_for) as make:
        yield make


@contextmanager
def app_environment(path: Path, **variables: str):
    """The Streamlit app's environment for one test module: its data dir and `variables`, with
    Streamlit's cached chatbot cleared on the way in and out, so the module gets its own."""
    import streamlit as st

    with pytest.MonkeyPatch.context() as env:
        env.setenv("CAFBOT_DATA_DIR", str(path))
        for name, value in variables.items():
            env.setenv(name, value)
        st.cache_resource.clear()
        yield path
    st.cache_resource.clear()
