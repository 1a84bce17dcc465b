import json

import pytest

from app.cli.common import load_settings
from app.core.config import Provider, Settings
from app.core.errors import ConfigError


def test_offline_is_the_default_and_needs_no_model():
    settings = Settings()
    assert settings.profile == "offline"
    assert all(not settings.models.for_role(r).enabled for r in ("chat", "screener", "judge", "refiner"))


def test_local_profile_points_every_role_at_the_loopback_server():
    settings = Settings(profile="local")
    assert settings.models.judge.provider is Provider.LOCAL
    assert settings.models.judge.base_url == "http://127.0.0.1:8765/v1"


def test_explicit_role_settings_win_over_the_profile(monkeypatch):
    monkeypatch.setenv("CAFBOT_PROFILE", "openai")
    monkeypatch.setenv("CAFBOT_MODELS__JUDGE__MODEL", "my-judge")
    settings = Settings()
    assert settings.models.judge.model == "my-judge"
    assert settings.models.screener.model == "gpt-4o-mini"  # the profile still fills the rest


def test_toml_file_configures_crisis_contacts(tmp_path, monkeypatch):
    (tmp_path / "cafbot.toml").write_text(
        '[[crisis_contacts]]\nname = "Lifeline"\ncontact = "call 000-TEST"\n', encoding="utf-8")
    settings = Settings()
    assert [c.name for c in settings.crisis_contacts] == ["Lifeline"]


def test_bad_values_give_a_clear_message(monkeypatch):
    monkeypatch.setenv("CAFBOT_PROFILE", "cloud9")
    with pytest.raises(ConfigError, match="profile"):
        load_settings()


def test_config_show_masks_secrets(monkeypatch):
    monkeypatch.setenv("OPENAI_API_KEY", "sk-secret-value")
    shown = json.dumps(Settings(profile="openai").masked())
    assert "sk-secret-value" not in shown
    assert "****(set)" in shown


def test_unknown_caf_tiers_are_refused():
    from pydantic import ValidationError

    with pytest.raises(ValidationError, match="tiers"):
        Settings(caf={"tiers": [0, 7]})


def test_the_prompt_has_room_for_the_three_longest_sources():
    """The sources a card cites and retrieval's others all reach the prompt: a source that
    grows must not push the one on the request's topic out (the composer quotes only those)."""
    from langchain_core.messages import HumanMessage
    from langchain_core.messages.utils import count_tokens_approximately

    from app.kb.loader import load_knowledge_base

    settings = Settings()
    costs = sorted((count_tokens_approximately([HumanMessage(source.body)])
                    for source in load_knowledge_base(settings.knowledge_base)), reverse=True)
    assert sum(costs[:3]) <= settings.prompting.source_token_budget
