"""A crisis in any language gets the crisis reply, before the "English only" notice: a suicide
statement in Chinese, Russian, Hindi or Japanese never gets only "Sorry, I can only answer in
English for now". Each language says every kind of crisis (crisis_languages.yaml), its examples
show each one and its figures of speech, and English is never matched here (the English screen
tells a calm question from a crisis)."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from app.core.config_sections import CrisisContact
from screening import crisis_languages

EXAMPLES = [(code, text, kind) for code, lang in crisis_languages.languages().items()
            for kind in ("crisis", "safe") for text in getattr(lang.examples, kind)]
CONCEPTS = list(crisis_languages.Concepts.model_fields)
TRAIN = Path(__file__).resolve().parents[1] / "scenarios" / "screen" / "train"
CONTACT = CrisisContact(name="Test crisis line", contact="call 000 000")


@pytest.mark.parametrize(("code", "text", "kind"), EXAMPLES, ids=[f"{c}-{k}-{n}" for n, (c, _, k) in enumerate(EXAMPLES)])
def test_every_language_example(code, text, kind):
    found = crisis_languages.find(text)
    if kind == "crisis":
        assert found is not None and found[0] == code, text
    else:
        assert found is None, (text, found)


def test_at_least_the_languages_the_screen_promises():
    assert {"de", "fr", "es", "it", "pt", "pl", "nl", "ro", "el", "sv", "cs", "ru", "uk",
            "ar", "hi", "tr", "zh", "ja", "hu"} <= set(crisis_languages.languages())


@pytest.mark.parametrize("code", list(crisis_languages.languages()))
def test_every_language_says_every_kind_of_crisis_and_shows_each(code):
    lang = crisis_languages.languages()[code]
    assert all(getattr(lang.concepts, name) for name in CONCEPTS)
    crisis = [crisis_languages.fold(text) for text in lang.examples.crisis]
    compiled = {c.name: c.pattern for c in next(concepts for c, concepts, _ in crisis_languages._compiled() if c == code)}
    unshown = [name for name in CONCEPTS if not any(compiled[name].search(text) for text in crisis)]
    assert not unshown, f"{code}: no crisis example for {unshown}"


def _scanning_every_concept(text: str) -> tuple[str, str, str] | None:
    """find_concept without the literal sets: every concept's pattern scans the message."""
    folded = crisis_languages.fold(text)
    for code, concepts, figures in crisis_languages._compiled():
        spans = [m.span() for m in figures.finditer(folded)] if figures else []
        for concept in concepts:
            for match in concept.pattern.finditer(folded):
                if not any(start < match.end() and match.start() < end for start, end in spans):
                    return code, concept.name, match.group(0)
    return None


def test_skipping_concepts_whose_literals_are_absent_never_changes_a_finding():
    """The literal sets only save work: on every example and every training message, in every
    language, the screen finds what scanning with every pattern finds."""
    messages = [text for _, text, _ in EXAMPLES]
    for path in sorted(TRAIN.glob("*.jsonl")):
        messages += [json.loads(line)["user"] for line in path.read_text(encoding="utf-8").splitlines() if line.strip()]
    assert len(messages) > 5000
    assert sum(c.needs is not None for _, concepts, _ in crisis_languages._compiled() for c in concepts) > 150
    differing = [(m, found, reference) for m in messages
                 if (found := crisis_languages.find_concept(m)) != (reference := _scanning_every_concept(m))]
    assert not differing[:5]


def _english(name: str) -> list[str]:
    rows = [json.loads(line) for line in (TRAIN / name).read_text(encoding="utf-8").splitlines() if line.strip()]
    return [row["user"] for row in rows if row.get("language", "en") == "en"]


@pytest.mark.parametrize("name", ["ordinary-questions-idioms-complaints.jsonl", "smalltalk.jsonl", "crisis-every-kind.jsonl"])
def test_english_never_matches(name):
    """English is the English screen's: not even an English crisis is this screen's to find, and
    an English idiom or calm question must never be taken for another language's crisis."""
    messages = _english(name)
    assert messages
    matched = [(text, crisis_languages.find_concept(text)) for text in messages if crisis_languages.find(text)]
    assert not matched


def test_find_names_the_concept_and_find_keeps_its_shape():
    assert crisis_languages.find_concept("Ich habe eben die ganze Packung Tabletten geschluckt") == (
        "de", "overdose_taken", "ganze packung tabletten geschluckt")
    assert crisis_languages.find("Ich habe eben die ganze Packung Tabletten geschluckt") == (
        "de", "ganze packung tabletten geschluckt")
    assert crisis_languages.find("Wie wirkt eine Depotspritze?") is None


@pytest.mark.parametrize(("typed", "written"), [
    ("uberdosis genommen", "Überdosis genommen"),  # accents left off
    ("θελω να πεθανω", "θέλω να πεθάνω"),  # Greek without tonos
    ("اريد ان اموت", "أريد أن أموت"),  # Arabic without hamza
    ("chce umrzec", "chcę umrzeć"),  # Polish without ogonek
])
def test_a_crisis_typed_without_accents_is_the_same_crisis(typed, written):
    assert crisis_languages.find(typed) is not None
    assert crisis_languages.find(typed)[0] == crisis_languages.find(written)[0]


@pytest.mark.parametrize("message", [
    "我不想活了，今晚就结束自己的生命",  # Chinese
    "Я больше не хочу жить, сегодня покончу с собой",  # Russian
    "मैं मरना चाहता हूँ",  # Hindi
    "もう死にたい",  # Japanese
    "Chcę umrzeć, dziś się zabiję",  # Polish
    "Não quero mais viver",  # Portuguese
    "Voglio morire, stasera la faccio finita",  # Italian
    "Meg akarok halni",  # Hungarian
])
def test_a_crisis_in_another_language_gets_the_crisis_reply_through_the_graph(fast_bot, message):
    bot = fast_bot(crisis_contacts=[CONTACT])
    trace = bot.ask(bot.new_thread(), message)
    assert trace.route == "crisis" and "call 000 000" in trace.answer
    assert "only answer in English" not in trace.answer


def test_an_ordinary_message_in_another_language_gets_the_notice_with_the_contacts(fast_bot):
    bot = fast_bot(crisis_contacts=[CONTACT])
    trace = bot.ask(bot.new_thread(), "精神分裂症是什么？有哪些治疗方法？")
    assert trace.route == "notice" and "only answer in English" in trace.answer
    assert "call 000 000" in trace.answer
