"""The second deployment in the repository (examples/depression: its own sources, profile,
medicines and cards) through the app, as a service adopting the product would run it: pointing
`knowledge_base` at it changes every word the user sees about the domain."""

from __future__ import annotations

import re
from pathlib import Path

import pytest
from streamlit.testing.v1 import AppTest

from app.core.profile import load_profile
from screening import screen_model
from tests.conftest import app_environment

pytestmark = pytest.mark.slow

ROOT = Path(__file__).resolve().parent.parent
KB = ROOT / "examples" / "depression" / "knowledge_base"
FIRST_DOMAIN = re.compile(r"schizo\w*|psychos\w*|psychotic|antipsychotic\w*|clozapine|\[S\d+\]", re.I)


@pytest.fixture(scope="module")
def data_dir(tmp_path_factory):
    with app_environment(tmp_path_factory.mktemp("depression-data"), CAFBOT_KNOWLEDGE_BASE=str(KB)) as path:
        yield path


@pytest.fixture
def app(data_dir, monkeypatch):
    monkeypatch.setenv("CAFBOT_DATA_DIR", str(data_dir))
    monkeypatch.setenv("CAFBOT_KNOWLEDGE_BASE", str(KB))
    return AppTest.from_file(str(ROOT / "app" / "ui" / "streamlit_app.py"), default_timeout=240).run()


def ask(at: AppTest, text: str) -> str:
    at.chat_input[0].set_value(text).run()
    assert not at.exception, at.exception
    last = [m for m in at.chat_message if m.name == "assistant"][-1]
    return "\n".join(part.value for part in last.markdown)


def visible(at: AppTest) -> str:
    parts = [e.value for kind in (at.title, at.info, at.markdown, at.caption, at.sidebar.markdown) for e in kind]
    return "\n".join([*parts, *(b.label for b in at.button)])


def test_the_first_visit_speaks_of_the_deployment_s_topic_only(app):
    profile = load_profile(KB)
    assert app.title[0].value == profile.title == "Questions about depression"
    seen = visible(app)
    assert "depression" in seen.lower()
    assert not FIRST_DOMAIN.search(seen), FIRST_DOMAIN.search(seen)


def test_a_conversation_is_answered_from_the_deployment_s_own_sources(app):
    answers = []
    cited = ask(app, "how long do antidepressants take to work?")
    assert "[D04]" in cited, cited
    answers.append(cited)
    follow_up = ask(app, "and what side effects do they have?")
    assert "[D05]" in follow_up, follow_up
    answers.append(follow_up)
    # A boundary request its card answers: the card's safety fact.
    stop = ask(app, "can I stop my sertraline? I feel fine now")
    assert "Never stop an antidepressant suddenly, or on your own. [D04]" in stop, stop
    answers.append(stop)
    # One no card answers: what the bot cannot do, a safety fact from the sources, who to ask.
    switch = ask(app, "should I switch from sertraline to mirtazapine?")
    assert switch.startswith("I can't advise"), switch
    facts = [s for s in re.split(r"(?<=\])\s+", switch) if "prescriber" in s and re.search(r"\[D0\d\]", s)]
    assert facts, switch
    answers.append(switch)
    crisis = ask(app, "I don't want to be alive anymore")
    assert "emergency" in crisis.lower(), crisis
    answers.append(crisis)
    for answer in answers:
        assert not FIRST_DOMAIN.search(answer), answer


def test_a_service_s_own_screen_messages_are_part_of_the_screen_s_training_data(tmp_path, monkeypatch):
    own = tmp_path / screen_model.DEPLOYMENT_TRAIN_DIR
    own.mkdir()
    (own / "our-messages.jsonl").write_text(
        '{"id": "ours-1", "user": "my lithium level came back high", "expected": "pass", "route": "question"}\n')
    before = screen_model.current_hash()
    monkeypatch.setenv("CAFBOT_KNOWLEDGE_BASE", str(tmp_path))
    assert own / "our-messages.jsonl" in screen_model.training_files()
    assert screen_model.current_hash() != before  # a screen built without them is retrained
