"""The source identifier and the local checks' resources load side by side; the chatbot gets the
same two objects as when they loaded one after the other, and the same error when both fail."""

from __future__ import annotations

from types import SimpleNamespace

import pytest

import app.retrieval
from app.core.config import Settings
from app.graph import services


class _Identifier:
    def correct_english(self, text: str) -> str:
        return text.replace("skitzofrenia", "schizophrenia")


def _resources(settings, embedder, correct_english=None):
    return SimpleNamespace(correct_english=correct_english)


def test_the_resources_read_with_the_identifiers_speller(monkeypatch, tmp_path):
    identifier = _Identifier()
    monkeypatch.setattr(app.retrieval, "open_identifier", lambda settings, embedder, show_progress: identifier)
    monkeypatch.setattr(services.Resources, "from_settings", _resources)
    opened, resources = services._identifier_and_resources(Settings(data_dir=tmp_path), object(), None, False)
    assert opened is identifier
    assert resources.correct_english == identifier.correct_english
    assert resources.correct_english("what is skitzofrenia") == "what is schizophrenia"


def test_a_given_identifier_is_not_opened_again(monkeypatch, tmp_path):
    def never(*args, **kwargs):
        raise AssertionError("opened an identifier it was given")

    monkeypatch.setattr(app.retrieval, "open_identifier", never)
    monkeypatch.setattr(services.Resources, "from_settings", _resources)
    identifier = _Identifier()
    opened, resources = services._identifier_and_resources(Settings(data_dir=tmp_path), object(), identifier, False)
    assert opened is identifier and resources.correct_english == identifier.correct_english


def test_when_both_fail_the_identifiers_error_comes_first(monkeypatch, tmp_path):
    def no_knowledge_base(settings, embedder, show_progress):
        raise FileNotFoundError("knowledge_base/: no sources")

    def stale(settings, embedder, correct_english=None):
        raise RuntimeError("input_screen is stale")

    monkeypatch.setattr(app.retrieval, "open_identifier", no_knowledge_base)
    monkeypatch.setattr(services.Resources, "from_settings", stale)
    with pytest.raises(FileNotFoundError, match="no sources"):
        services._identifier_and_resources(Settings(data_dir=tmp_path), object(), None, False)
    monkeypatch.setattr(app.retrieval, "open_identifier", lambda settings, embedder, show_progress: _Identifier())
    with pytest.raises(RuntimeError, match="stale"):
        services._identifier_and_resources(Settings(data_dir=tmp_path), object(), None, False)
