"""Example messages: loading and validating them, the classifier learned from them, and how
retrieval blends it in (real model, real Chroma in tmp_path)."""

from __future__ import annotations

from pathlib import Path

import numpy as np
import pytest

from app.core.config import Settings
from app.core.errors import KnowledgeBaseError
from app.kb import load_knowledge_base
from app.kb.examples import ExampleSet
from app.retrieval.examples import ExampleClassifier
from app.retrieval.identify import SourceIdentifier
from tests.fakes import write_sources

SOURCES = {
    "V01": ("Coping with voices", "Practical ways to cope with hearing voices.", "voices, hallucinations",
            "Many people who hear voices find distraction helps: humming, music through headphones, or "
            "talking to someone they trust. Hearing voices groups offer support from peers."),
    "W01": ("Returning to work", "Going back to a job after being unwell.", "work, employment, job",
            "Supported employment helps people find and keep a job. You can ask your employer for "
            "reasonable adjustments such as part-time hours. Telling them about the illness is your choice."),
    "E01": ("Healthy eating", "Food, appetite and weight while taking medicines.", "diet, weight, appetite",
            "Some medicines increase appetite and weight. Eating vegetables, drinking water instead of "
            "sugary drinks and regular meals can help keep your weight steady."),
}

EXAMPLES = {
    "V01": ["he mutters back at people who are not in the room", "she says someone keeps talking to her "
            "but nobody is there", "my son answers whispers none of us can hear", "I get commentary in my "
            "head all day, how do I drown it out", "mum argues with somebody invisible at night"],
    "W01": ["can I go back to my job after being ill", "should I tell my boss about my diagnosis",
            "my brother wants to start earning again", "will they let me do fewer hours at the office",
            "how do I get back into employment"],
    "E01": ["I keep getting hungrier on these tablets", "my jeans don't fit since the pills",
            "what should I eat to stop piling on pounds", "he raids the fridge every night now",
            "healthy meals when you're on meds"],
    "none": ["what time does the bus to the airport leave", "how do I fix a flat bicycle tyre",
             "recipe for banana bread", "who won the cricket yesterday", "how much is a passport renewal"],
}


def write_kb(folder: Path, examples: dict[str, list[str]] | None = None) -> Path:
    write_sources(folder, SOURCES)
    if examples:
        (folder / "examples").mkdir(exist_ok=True)
        for sid, messages in examples.items():
            lines = "".join(f'  - "{m}"\n' for m in messages)
            (folder / "examples" / f"{sid}.yaml").write_text(f"source: {sid}\nmessages:\n{lines}",
                                                             encoding="utf-8")
    return folder


# -- loading -----------------------------------------------------------------------------------
def test_examples_load_with_the_knowledge_base(tmp_path):
    kb = load_knowledge_base(write_kb(tmp_path / "kb", EXAMPLES))
    loaded = {e.source: e.messages for e in kb.examples}
    assert loaded == EXAMPLES


def test_a_knowledge_base_without_examples_loads_as_before(tmp_path):
    assert load_knowledge_base(write_kb(tmp_path / "kb")).examples == []


@pytest.mark.parametrize(("text", "expected"), [
    ("source: X99\nmessages: [\"hello there\"]\n", "examples/bad.yaml: field 'source': 'X99' is not a source here"),
    ("source: V01\nmessages: []\n", "examples/bad.yaml: field 'messages'"),
    ("source: V01\nmesages: [\"a\"]\n", "examples/bad.yaml: field 'mesages'"),
    ("source: V01\nmessages: [\"a\"\n", "examples/bad.yaml: invalid YAML (line"),
])
def test_a_bad_example_file_is_named_with_its_field(tmp_path, text, expected):
    folder = write_kb(tmp_path / "kb", {"V01": ["fine message"]})
    (folder / "examples" / "bad.yaml").write_text(text, encoding="utf-8")
    with pytest.raises(KnowledgeBaseError) as error:
        load_knowledge_base(folder)
    assert expected in str(error.value)


# -- the classifier ------------------------------------------------------------------------------
class CountingEmbed:
    """The real embedder, counting the texts it is asked to embed."""

    def __init__(self, embedder):
        self.embedder, self.texts = embedder, 0

    def __call__(self, texts: list[str]) -> np.ndarray:
        self.texts += len(texts)
        return self.embedder.encode(texts, cache=False)


def sets(examples: dict[str, list[str]]) -> list[ExampleSet]:
    return [ExampleSet(source=sid, messages=messages) for sid, messages in examples.items()]


@pytest.mark.slow
def test_the_classifier_reads_unseen_messages_by_the_examples_meaning(embedder, tmp_path):
    classifier = ExampleClassifier.fit(sets(EXAMPLES), CountingEmbed(embedder), cache_dir=tmp_path)
    assert classifier is not None
    unseen = ["my dad talks to people who aren't there", "the meds have made her put on so much weight",
              "any trains to london tonight"]
    best = [max(p, key=p.get) for p in classifier.probabilities(embedder.encode(unseen))]
    assert best == ["V01", "E01", "none"]


@pytest.mark.slow
def test_the_fitted_classifier_is_reused_until_an_example_changes(embedder, tmp_path):
    embed = CountingEmbed(embedder)
    first = ExampleClassifier.fit(sets(EXAMPLES), embed, cache_dir=tmp_path)
    embedded = embed.texts
    again = ExampleClassifier.fit(sets(EXAMPLES), embed, cache_dir=tmp_path)
    assert embed.texts == embedded  # loaded, not embedded again
    vector = embedder.encode(["hearing things at night"])
    assert again.probabilities(vector) == first.probabilities(vector)
    changed = {**EXAMPLES, "E01": [*EXAMPLES["E01"], "is crisps for dinner ok"]}
    ExampleClassifier.fit(sets(changed), embed, cache_dir=tmp_path)
    assert embed.texts > embedded
    assert len(list(tmp_path.glob("examples-*.joblib"))) == 2  # both fits are kept, each under its fingerprint


def test_one_class_is_nothing_to_learn(embedder):
    assert ExampleClassifier.fit(sets({"V01": EXAMPLES["V01"]}), CountingEmbed(embedder)) is None


# -- retrieval with examples -------------------------------------------------------------------
@pytest.fixture(scope="module")
def identifiers(tmp_path_factory, embedder) -> tuple[SourceIdentifier, SourceIdentifier]:
    """The same knowledge base read with its examples and without them."""
    from app.retrieval import open_identifier

    root = tmp_path_factory.mktemp("examples")
    settings = Settings(knowledge_base=write_kb(root / "kb", EXAMPLES), data_dir=root / "data")
    with_examples = open_identifier(settings, embedder)
    assert with_examples.examples is not None
    without = SourceIdentifier(with_examples.knowledge_base, with_examples.index, settings)
    return with_examples, without


@pytest.mark.slow
def test_a_message_in_everyday_words_is_found_through_the_examples(identifiers):
    with_examples, without = identifiers
    message = "my grandad keeps chatting away to folk that nobody else can see or hear"
    lifted, plain = dict(with_examples.score([message])[0]), dict(without.score([message])[0])
    assert max(lifted, key=lifted.get) == "V01"
    assert lifted["V01"] > 3 * plain["V01"]  # confidences are a sigmoid of evidence: the lift multiplies
    # ... and lowers the sources the examples read it as not about
    assert all(lifted[sid] < conf for sid, conf in plain.items() if sid != "V01")


@pytest.mark.slow
def test_a_message_like_the_none_examples_is_not_covered(identifiers):
    with_examples, _ = identifiers
    assert with_examples.identify("what platform does the 9 o'clock train go from").outcome == "none"


class FixedClassifier:
    """A classifier that reads every message as `probabilities`."""

    def __init__(self, probabilities: dict[str, float]):
        self._probabilities = probabilities

    def probabilities(self, vectors):
        return [dict(self._probabilities) for _ in vectors]


@pytest.mark.slow
def test_none_from_the_examples_does_not_overrule_retrieval_that_is_sure(identifiers):
    with_examples, _ = identifiers
    sure = "Can I ask my employer for reasonable adjustments such as part-time hours?"
    assert with_examples.identify(sure).outcome == "clear"
    reads_none = SourceIdentifier(with_examples.knowledge_base, with_examples.index, with_examples.settings,
                                  examples=FixedClassifier({"none": 0.9, "W01": 0.1}))
    found = reads_none.identify(sure)
    assert found.outcome != "none" and found.candidates[0].source_id == "W01"
    unsure = "is it hard to find things to do"
    assert reads_none.identify(unsure).outcome == "none"


@pytest.mark.slow
def test_no_example_nearly_repeats_a_question_of_an_evaluation_set(embedder, knowledge_base, evaluation_messages):
    """Retrieval learns from the examples, and the evaluation sets measure it: a message in both
    would measure memory, not reading."""
    questions = evaluation_messages
    messages = [m for e in knowledge_base.examples for m in e.messages]
    assert len(messages) > 1000 and len(questions) > 500
    closest = (embedder.encode(messages, cache=False) @ embedder.encode(questions, cache=False).T).max(axis=1)
    assert float(closest.max()) <= 0.9, messages[int(closest.argmax())]


@pytest.mark.slow
def test_a_source_the_examples_are_sure_of_is_a_clear_match_below_retrieval_s_own(identifiers):
    """Words retrieval finds nowhere, a classifier sure of a source: it is answered from it. A
    message retrieval is sure of keeps its source first, whatever the classifier says."""
    with_examples, _ = identifiers
    far = "she sobs into the pillow whenever the neighbour's dog barks"
    settings = with_examples.settings
    assert settings.retrieval.examples_sure < 0.9
    sure_of = {"V01": 0.9, "W01": 0.04, "E01": 0.03, "none": 0.03}
    plain = SourceIdentifier(with_examples.knowledge_base, with_examples.index, settings,
                             examples=FixedClassifier({sid: 0.25 for sid in ("V01", "W01", "E01", "none")}))
    sure = SourceIdentifier(with_examples.knowledge_base, with_examples.index, settings,
                            examples=FixedClassifier(sure_of))
    assert plain.identify(far).outcome != "clear"
    found = sure.identify(far)
    assert found.outcome == "clear" and found.candidates[0].source_id == "V01", found
    own_words = sure.identify("Can I ask my employer for reasonable adjustments such as part-time hours?")
    assert own_words.candidates[0].source_id == "W01", own_words


def test_the_default_deployment_s_example_fit_ships_for_its_examples_as_they_are():
    """A first start loads it instead of embedding thousands of messages; `make train` writes it."""
    from app.core.config import DEFAULT_KNOWLEDGE_BASE
    from app.core.embeddings import MODEL_NAME
    from app.core.profile import load_profile
    from app.kb.loader import load_knowledge_base
    from app.retrieval.examples import SHIPPED_DIR, fit_key, training_texts

    texts, labels = training_texts(load_knowledge_base(DEFAULT_KNOWLEDGE_BASE).examples,
                                   load_profile(DEFAULT_KNOWLEDGE_BASE).condition_words)
    key = fit_key(texts, labels, MODEL_NAME)
    assert [p.name for p in SHIPPED_DIR.glob("examples-*.joblib")] == [f"examples-{key}.joblib"], "run `make train`"
