"""A second deployment is a profile, not a fork: every fixed reply and prompt that names the domain
reads the profile beside the knowledge base; with none, the wording names no condition."""

from __future__ import annotations

import re

import pytest

from app.core.config import DEFAULT_KNOWLEDGE_BASE
from app.core.errors import ConfigError
from app.core.medicines import load_vocabulary
from app.core.profile import Profile, load_profile
from app.prompts import PROMPTS_DIR, chat_system_prompt, crisis_reply, replies, reply
from judges.rules import load_rules

BIPOLAR = Profile(service="moodline", topic="bipolar disorder", audience="people with bipolar disorder and their carers",
                  covers="mood episodes, lithium and other mood stabilisers, and staying well",
                  example_question="What is a mood stabiliser?", title="Questions about bipolar disorder",
                  input_hint="Ask about bipolar disorder…")
FIRST = load_profile(DEFAULT_KNOWLEDGE_BASE)
FIRST_WORDS = re.compile(r"schizo\w*|psychos\w*|antipsychotic\w*|clozapine", re.I)


def every_reply(profile: Profile | None) -> dict[str, str]:
    values = {"contacts": "- Emergency services: 112", "examples": "- What is a mood stabiliser?", "topics": "Lithium",
              "titles": '"Lithium"', "options": "- Lithium", "model_line": "", "medicines": "lithium",
              "warning_signs": load_vocabulary(None).warning_signs("")}
    return {name: reply(name, profile, **values) for name in replies()}


def every_prompt(profile: Profile | None) -> dict[str, str]:
    from app.drift.facilitators import LLMFacilitator
    from app.drift.schema import load_facilitators

    prompts = {"chat system": chat_system_prompt([("B1", "Lithium", "Lithium is a mood stabiliser.")], [], profile),
               "rules": load_rules().as_prompt(profile, "B1")}
    prompts |= {path.name: path.read_text(encoding="utf-8") for path in (PROMPTS_DIR.parent.parent / "judges" /
                                                                          "prompts").glob("*.md")}
    prompts |= {path.name: path.read_text(encoding="utf-8") for path in PROMPTS_DIR.glob("*.md")}
    spec = next(iter(load_facilitators().values()))
    prompts["facilitator frame"] = LLMFacilitator(spec, client=None, topic=(profile or Profile()).topic).messages([])[0].content
    prompts["facilitator frame"] = prompts["facilitator frame"].replace(spec.persona, "").replace(spec.goal, "")
    return prompts


def test_the_shipped_profile_names_its_condition():
    assert FIRST.topic == "schizophrenia" and "schizophrenia" in reply("small_talk_greeting", FIRST, examples="")


@pytest.mark.parametrize("profile", [BIPOLAR, None], ids=["second profile", "no profile"])
def test_no_fixed_reply_or_prompt_names_the_first_deployments_condition(profile):
    rendered = {**every_reply(profile), **every_prompt(profile)}
    named = {name: FIRST_WORDS.findall(text) for name, text in rendered.items() if FIRST_WORDS.search(text)}
    assert not named, named
    if profile is BIPOLAR:
        for name in ("small_talk_greeting", "small_talk_capabilities", "small_talk_identity", "crisis_continued",
                     "chat system", "rules"):
            assert "bipolar disorder" in rendered[name], name
        assert '"What is a mood stabiliser?"' in rendered["empty_message"]
        assert "moodline" in rendered["small_talk_identity"]


def test_the_turn_after_a_crisis_speaks_of_the_profiles_topic():
    answer = crisis_reply([], continued=True, profile=BIPOLAR)
    assert "bipolar disorder" in answer and not FIRST_WORDS.search(answer)


def test_a_profile_with_an_unknown_field_names_the_file_and_the_field(tmp_path):
    (tmp_path / "profile.yaml").write_text("topic: bipolar disorder\ncondition: bipolar\n")
    with pytest.raises(ConfigError, match=r"profile\.yaml: field 'condition': Extra inputs"):
        load_profile(tmp_path)
    assert load_profile(tmp_path / "elsewhere") == Profile()


def test_the_medical_emergency_reply_names_the_warning_signs_of_the_medicine_named_and_no_other(tmp_path):
    (tmp_path / "medicines.yaml").write_text(
        "medicines:\n  lithium:\n    warning_signs: being sick, diarrhoea, shaking, unsteadiness or confusion\n")
    bipolar, first = load_vocabulary(tmp_path), load_vocabulary(DEFAULT_KNOWLEDGE_BASE)
    said = "she is on lithium and being sick"
    lithium = crisis_reply([], situation="medical", profile=BIPOLAR, warning_signs=bipolar.warning_signs(said))
    assert "on lithium, being sick, diarrhoea" in lithium and not FIRST_WORDS.search(lithium)
    said = "he has a high fever and can't stand"
    unnamed = crisis_reply([], situation="medical", profile=FIRST, warning_signs=first.warning_signs(said))
    assert "very stiff muscles" in unnamed and "clozapine" not in unnamed
    said = "fever and sore throat on Clozaril"
    clozapine = crisis_reply([], situation="medical", profile=FIRST, warning_signs=first.warning_signs(said))
    assert "on clozapine, a fever, sore throat" in clozapine
    # The second deployment's file adds to the product's vocabulary; the first's warnings stay its own.
    assert "lithium" not in first.warning_signs("lithium and being sick")
