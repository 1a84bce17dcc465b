"""The grounded extractive generator: only the sources' own sentences, each cited."""

import re

import pytest

from app.core.records import SourceText
from app.core.text import citations_in, split_sentences, strip_citations
from app.generation.extractive import compose_extractive_answer, source_sentences

SLEEP = SourceText(id="S22", title="Sleep", text="""# Sleep

## Why sleep changes
Sleeping much less than usual can be an early warning sign of relapse.
Some medicines make people drowsy, especially when they start.

## What helps
Good habits often help:

- going to bed at the same time
- keeping screens out of the bedroom
- less caffeine after lunch

Tell your care team if poor sleep lasts more than a week or two.
""")
SMOKING = SourceText(id="S23", title="Diet, exercise and smoking", text="""# Smoking
Smoking changes the level of some antipsychotic medicines in the blood.
Tell your team before you stop or start smoking, so they can check your medicine.
""")


def test_sentences_drop_headings_and_keep_lists_with_their_lead_in():
    sentences = source_sentences(SLEEP.text)
    assert not any(s.startswith("#") for s in sentences)
    assert ("Good habits often help: going to bed at the same time; keeping screens out of the "
            "bedroom; less caffeine after lunch.") in sentences
    assert all(len(s.split()) >= 3 for s in sentences)


@pytest.mark.slow
def test_every_sentence_comes_from_a_source_and_is_cited(embedder):
    embed = embedder.encode
    answer = compose_extractive_answer(
        ["how can I sleep better?", "does smoking change my medicine?"], [SLEEP, SMOKING], embed)
    body, reminder = answer.rsplit("\n\n", 1)
    assert "care team" in reminder
    for sentence in split_sentences(body):
        cited = citations_in(sentence)
        assert len(cited) == 1, sentence
        source = {"S22": SLEEP, "S23": SMOKING}[cited[0]]
        assert strip_citations(sentence).strip() in source_sentences(source.text)
    assert set(re.findall(r"\[(S\d+)\]", answer)) == {"S22", "S23"}  # each part got its source


@pytest.mark.slow
def test_what_was_already_said_in_other_words_is_not_said_again(embedder):
    question = ["how do I know if my sleep problems matter?"]
    plain = compose_extractive_answer(question, [SLEEP], embedder.encode)
    assert "Tell your care team if poor sleep lasts more than a week or two." in plain
    said = ["Please tell your care team if your poor sleep lasts more than a week or two. [S22]"]
    answer = compose_extractive_answer(question, [SLEEP], embedder.encode, already_said=said)
    assert "poor sleep lasts" not in answer, answer
    assert citations_in(answer) == ["S22"]  # something new from the source still answers
