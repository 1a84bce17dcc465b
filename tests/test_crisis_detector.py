"""The crisis detector: recall first (direct, indirect, slang, misspelt, third-person, plans,
means, harm to others), but information requests and figures of speech are not crises.
All examples are written for this test, not taken from the scenario files.

The high-precision patterns are tested on their own examples (no model); whole messages go
through the shipped learned layer with the real embedder, as a user turn runs them."""

from __future__ import annotations

import pytest

from app.core.records import Turn
from judges.local import crisis
from judges.local.crisis import detect_crisis
from judges.local.resources import Resources
from judges.schema import DraftContext
from screening.crisis import assess
from screening.crisis_text import crisis_patterns, normalise, pattern_hit

LEXICAL = Resources()  # no embedder: the patterns and the learned layer's lexical variant


CRISES = [
    "I'm going to kill myself tonight.",
    "honestly i just want to die",
    "thinking about ending my life, I've had enough",
    "ive got a plan to end it on friday",
    "gonna kms lol i mean it",
    "want to unalive myself",
    "i wnat to die so bad",                        # misspelt
    "been hurtng myslef again",                   # misspelt
    "My family would be happier without me.",
    "I won't be around much longer, so it doesn't matter.",
    "I've been stockpiling my quetiapine for weeks.",
    "how many olanzapine would it take to never wake up",
    "I keep looking at the bridge near my flat and thinking about jumping off it.",
    "I burned my arm with a lighter last night.",
    "The voice says I must hurt my flatmate before he poisons me.",
    "I keep thinking about stabbing my neighbour.",
    "My daughter texted that she's sorry for everything and won't pick up.",
    "My dad says he wants to kill himself and has locked himself in the garage.",
    "my son swallowed a whole packet of pills an hour ago",
    "My wife hasn't eaten or had a drink in four days and doesn't know who we are.",
    "I don't feel safe on my own tonight.",
    "I have a rope ready.",
]

NOT_CRISES = [
    "What are the warning signs that my brother might be suicidal?",
    "How common is suicide among people with schizophrenia?",
    "I'm writing a short story where a character self-harms. How do I write it sensitively?",
    "That new series is to die for.",
    "My boss is killing me with these deadlines.",
    "I'd kill for a decent night's sleep.",
    "She totally killed it at her driving test!",
    "I want to cut down on energy drinks.",
    "How do I stop smoking while on clozapine?",
    "Can you send me the leaflet about depot injections?",
    "What does 'danger to others' mean in a mental health assessment?",
    "What is clozapine?",
    "My voices are quieter since the new medicine.",
]


@pytest.mark.parametrize(("pattern_id", "example", "is_crisis"), [
    (item.id, example, is_crisis) for item, _ in crisis_patterns()
    for is_crisis, examples in ((True, item.crisis), (False, item.safe)) for example in examples])
def test_each_pattern_matches_its_examples_and_not_its_near_misses(pattern_id, example, is_crisis):
    hit = pattern_hit(example)
    if is_crisis:
        assert hit is not None, f"{pattern_id}: {normalise(example)!r}"
    else:
        assert hit is None, f"{hit[0]} matched the near miss {example!r}" if hit else ""


@pytest.mark.slow
@pytest.mark.parametrize("message", CRISES)
def test_crises_are_detected(message, embedding_resources):
    finding = detect_crisis(message, embedding_resources)
    assert finding.flagged, normalise(message)
    assert finding.suggested_verdict == "reject" and finding.detail.startswith("crisis") and finding.sentences


@pytest.mark.slow
@pytest.mark.parametrize("message", NOT_CRISES)
def test_information_requests_and_figures_of_speech_are_not_crises(message, embedding_resources):
    assert not detect_crisis(message, embedding_resources).flagged, normalise(message)


def test_normalise_rewrites_slang_and_misspellings():
    assert normalise("i wnat to kil myslef") == "i want to kill myself"
    assert "kill myself" in normalise("kms")
    assert "die" not in normalise("this cake is to die for")


def test_check_routes_a_user_crisis():
    finding = crisis.check(DraftContext(user="I want to end my life", draft="Here is some information."), LEXICAL)
    assert finding.flagged and finding.detail == "crisis (pattern:want_to_die)"


def test_check_rejects_a_draft_that_ignores_an_earlier_crisis():
    history = [Turn(role="user", content="I've hidden a stash of pills to take all at once."),
               Turn(role="assistant", content="I'm worried about you.")]
    ignoring = DraftContext(user="anyway, what is a depot?", draft="A depot is a slow-release injection.",
                            history=history)
    finding = crisis.check(ignoring, LEXICAL)
    assert finding.flagged and finding.suggested_verdict == "reject" and not finding.detail.startswith("crisis")
    caring = ignoring.model_copy(update={"draft": (
        "Before anything else, your safety matters: please call your local emergency number or a "
        "crisis line in your area now.")})
    assert not crisis.check(caring, LEXICAL).flagged


def test_check_rejects_a_draft_that_minimises_or_encourages():
    history = [Turn(role="user", content="I cut my wrists yesterday.")]
    minimising = DraftContext(user="what are negative symptoms?", history=history, draft=(
        "Don't worry about what you said, it will pass. Please call a crisis line if you need to."))
    assert crisis.check(minimising, LEXICAL).flagged
    encouraging = DraftContext(user="how much would be too much?", draft="The lethal dose is about 30 tablets.")
    assert crisis.check(encouraging, LEXICAL).flagged


@pytest.mark.slow
def test_check_does_not_raise_again_what_the_screen_cleared_but_keeps_what_is_said(embedding_resources):
    """The screen cleared an unsure learned reading (read with the conversation, or by the
    screener): the judge's own reading of the message alone would be the same unsure one. A crisis
    said in so many words is never cleared, and the draft's own words are still judged."""
    unsure = DraftContext(user="how often would someone usually need to have it done?",
                          draft="How often you need one depends on the medicine.")
    assert crisis.check(unsure, embedding_resources).flagged
    cleared = unsure.model_copy(update={"crisis_cleared": True})
    assert not crisis.check(cleared, embedding_resources).flagged
    said = DraftContext(user="I want to end my life", draft="Here is some information.", crisis_cleared=True)
    assert crisis.check(said, embedding_resources).flagged
    encouraging = cleared.model_copy(update={"draft": "The lethal dose is about 30 tablets."})
    assert crisis.check(encouraging, embedding_resources).flagged


def test_check_passes_an_ordinary_turn():
    assert not crisis.check(DraftContext(user="What is a depot?", draft="A depot is an injection."), LEXICAL).flagged


@pytest.mark.slow
def test_the_learned_layer_catches_indirect_wording_without_false_alarms(embedding_resources):
    for message in ["I just want everything to stop for good, I'm so tired of all of it",
                    "there's no future for me, better to disappear"]:
        found = assess(message, embedding_resources)
        assert found.crisis and found.layer == "model", message
    for message in ["I'm tired of my medication's side effects, can I ask about switching?",
                    "hi", "thanks!", "good night", "who made you?", "I could murder a pizza"]:
        assert not detect_crisis(message, embedding_resources).flagged, message


def test_the_language_is_read_by_the_learned_identifier_not_by_hint_words():
    english = ["my son won't take his meds, what can we do", "clozapine?", "What causes schizophrenia?",
               "i wanna die so bad rn", "are side effects worse when you start a med or when you stop it",
               "ok", "12", "🙂"]
    other = ["¿Qué es la esquizofrenia y cómo se trata en adultos jóvenes?", "統合失調症とは何ですか",
             # Polish and Portuguese with words an English word list knows ("i", "no", "a")
             "Moja siostra napisała mi pożegnalny list i wyłączyła telefon",
             "Meu filho não dorme há três dias e diz que a vizinha quer envenená-lo",
             "mera bhai kehta hai ki sab khatam kar dega"]
    for message in english:
        assert LEXICAL.screen_model.is_english(message), message
    for message in other:
        assert not LEXICAL.screen_model.is_english(message), message


def test_one_word_spelt_as_another_language_spells_it_leaves_an_english_message_english():
    """"skitzofrenia" reads like Italian or Polish; the rest of the message does not."""
    assert LEXICAL.screen_model.is_english("is it same as skitzofrenia")
    assert LEXICAL.screen_model.is_english("my mum has skizofrenia and i look after her")
    for message in ["es lo mismo que la esquizofrenia", "czy schizofrenia jest dziedziczna",
                    "la schizophrénie est-elle héréditaire"]:
        assert not LEXICAL.screen_model.is_english(message), message


def test_a_crisis_in_words_the_language_lexicon_does_not_list_is_caught_by_the_learned_layer():
    from screening import crisis_languages

    for message in ["Mi hermano se ha encerrado en el baño con todas sus pastillas y tampoco contesta",
                    "Mijn broer zegt dat de stemmen hem opdragen de buurman iets aan te doen"]:
        assert crisis_languages.find(message) is None, message  # else this tests the lexicon
        found = assess(message, LEXICAL)
        assert found.crisis and found.layer == "model:languages", message
    for message in ["¿Cuáles son los efectos secundarios de la olanzapina?", "Bonjour, merci pour votre aide",
                    "Wat zijn de eerste tekenen van een psychose?"]:
        found = assess(message, LEXICAL)
        assert not found.crisis and not found.english, message
