"""Learned checks are built artefacts: `make` trains the ones missing or stale, run time loads them
and never trains; a missing, stale or foreign artefact stops start-up with one line naming the file
and the command that fixes it."""

from __future__ import annotations

import json
import shutil

import pytest

from app.core.learning import artefacts
from app.core.learning.artefacts import ArtefactError
from app.core.learning.logistic import predict_proba
from judges.local import role_model
from judges.local.resources import Resources
from screening import context_model, request_kind, screen_features, screen_model, screen_training


@pytest.fixture
def shipped_copy(tmp_path):
    folder = tmp_path / "artefacts"
    shutil.copytree(artefacts.ARTEFACTS_DIR, folder)
    return folder


def test_every_learned_check_has_an_artefact_with_a_model_card():
    for name in (screen_model.NAME, role_model.NAME, request_kind.NAME):
        card = json.loads((artefacts.ARTEFACTS_DIR / f"{name}.card.json").read_text())
        assert card["data_hash"] and card["split_sizes"] and card["trained_at"] and card["data_files"]
    card = json.loads((artefacts.ARTEFACTS_DIR / f"{screen_model.NAME}.card.json").read_text())
    for variant in ("lexical", "embedded"):
        assert 0.0 < card["thresholds"][f"{variant}.crisis"] < 1.0
        assert card["dev_metrics"][variant]["crisis_recall"] >= 0.9


def test_the_built_artefacts_match_the_training_data_in_this_checkout():
    """`make test` rebuilds what a training file's edit made stale; pytest alone fails here (and
    at start-up)."""
    for module in (screen_model, role_model, request_kind):
        card = json.loads((artefacts.ARTEFACTS_DIR / f"{module.NAME}.card.json").read_text())
        assert card["data_hash"] == module.current_hash(), f"{module.NAME} is stale: run make artefacts"


def test_kinds_of_request_are_learned_from_requests_alone_and_their_data_never_moves_the_screen(tmp_path, monkeypatch):
    """The kind-labelled requests teach the request-kind model only: the screen, which decides
    whether a message is a request at all, neither reads them nor goes stale when they change."""
    card = json.loads((artefacts.ARTEFACTS_DIR / f"{request_kind.NAME}.card.json").read_text())
    kinds_files = [str(p.relative_to(request_kind.REPO_ROOT)) for p in request_kind.kinds_files()]
    assert kinds_files and set(kinds_files) <= set(card["data_files"])
    assert not set(kinds_files) & {str(p.relative_to(request_kind.REPO_ROOT)) for p in screen_model.training_files()}
    assert card["dev_metrics"]["embedded"]["accuracy"] >= 0.85, card["dev_metrics"]["embedded"]
    screen_before, kinds_before = screen_model.current_hash(), request_kind.current_hash()
    edited = tmp_path / "kinds"
    shutil.copytree(request_kind.KINDS_DIR, edited)
    first = next(edited.glob("*.jsonl"))
    first.write_text(first.read_text() + json.dumps(
        {"id": "edit-1", "user": "can i have my tablets later today", "expected": "pass", "route": "boundary",
         "category": "dose", "language": "en"}) + "\n")
    monkeypatch.setattr(request_kind, "KINDS_DIR", edited)
    assert request_kind.current_hash() != kinds_before and screen_model.current_hash() == screen_before


@pytest.mark.slow
@pytest.mark.parametrize(("request_text", "kind"), [
    ("can I cut down on risperidone?", "stop_or_reduce"),
    ("should I cut down on my tablets", "stop_or_reduce"),
    ("thinking of cutting back on my olanzapine", "stop_or_reduce"),
])
def test_a_request_is_read_as_what_its_idioms_say(embedding_resources, request_text, kind):
    """The crisis reading sees a mark where "cut down on" was, so it never reads as harm; whether
    the message asks about the writer's own case, and of what kind, is read of what it says (with
    the mark, none of these was such a request, and the first was read as a switch)."""
    from screening.crisis import assess
    from screening.crisis_text import IDIOM_MARK, normalise

    assert IDIOM_MARK.strip() in normalise(request_text, idioms="marked")
    assert "reduce" in request_kind.as_read(request_text)
    found = assess(request_text, embedding_resources)
    assert not found.crisis and found.personal_advice and found.boundary_kinds[0] == kind, found


@pytest.mark.slow
@pytest.mark.parametrize("question", ["i want to cut down on coffee, any tips?", "how do people cut down on cannabis?"])
def test_a_general_question_with_an_idiom_stays_general(embedding_resources, question):
    from screening.crisis import assess

    found = assess(question, embedding_resources)
    assert not found.crisis and not found.personal_advice, found


@pytest.mark.slow
def test_no_kind_labelled_request_nearly_repeats_a_question_of_an_evaluation_set(embedder, evaluation_messages):
    """The request-kind model decides the boundary card an evaluation question gets: a request in
    its data that nearly repeats one would measure memory, not reading."""
    from app.core.scenarios import load_scenarios

    questions = evaluation_messages
    requests = [scenario.user for scenario in load_scenarios(request_kind.kinds_files())]
    assert len(requests) > 800 and len(questions) > 500
    closest = (embedder.encode(requests, cache=False) @ embedder.encode(questions, cache=False).T).max(axis=1)
    assert float(closest.max()) < 0.85, requests[int(closest.argmax())]


def test_a_missing_artefact_stops_start_up_naming_the_file_and_the_fix(shipped_copy):
    (shipped_copy / f"{screen_model.NAME}.joblib").unlink()
    with pytest.raises(ArtefactError) as caught:
        Resources(artefacts_dir=shipped_copy)
    message = str(caught.value)
    assert str(shipped_copy / f"{screen_model.NAME}.joblib") in message and "make artefacts" in message


def test_a_stale_artefact_stops_start_up(shipped_copy, monkeypatch):
    monkeypatch.setattr(screen_model, "current_hash", lambda: "0" * 64)
    with pytest.raises(ArtefactError, match=r"stale, its training data .* changed after it was trained"):
        Resources(artefacts_dir=shipped_copy)


def test_a_damaged_model_file_stops_start_up_however_its_card_reads(shipped_copy):
    model = shipped_copy / f"{role_model.NAME}.joblib"
    model.write_bytes(model.read_bytes()[:-1] + b"\0")
    with pytest.raises(ArtefactError, match=r"role_scope\.joblib: its model file's checksum differs"):
        Resources(artefacts_dir=shipped_copy)


def test_every_shipped_card_carries_its_model_file_s_checksum():
    for module in (screen_model, role_model, request_kind, context_model):
        card = artefacts.ModelCard.model_validate_json(
            (artefacts.ARTEFACTS_DIR / f"{module.NAME}.card.json").read_text(encoding="utf-8"))
        assert card.sha256 == artefacts.file_sha256(artefacts.ARTEFACTS_DIR / f"{module.NAME}.joblib"), module.NAME


def test_an_artefact_for_other_features_stops_start_up(shipped_copy):
    card_path = shipped_copy / f"{role_model.NAME}.card.json"
    card = json.loads(card_path.read_text())
    card["feature_version"] = 999
    card_path.write_text(json.dumps(card))
    with pytest.raises(ArtefactError, match="built for features v999"):
        Resources(artefacts_dir=shipped_copy)


def test_without_the_training_data_the_shipped_card_is_trusted(shipped_copy, monkeypatch):
    """An installed wheel carries the artefacts, not the scenarios: nothing to compare against."""
    monkeypatch.setattr(screen_model, "current_hash", lambda: None)
    monkeypatch.setattr(role_model, "current_hash", lambda: None)
    monkeypatch.setattr(request_kind, "current_hash", lambda: None)
    assert Resources(artefacts_dir=shipped_copy).screen_model.read("hello").small_talk > 0.5


def test_a_resources_never_trains(monkeypatch):
    def refuse(*_args, **_kwargs):
        raise AssertionError("run time must load the artefact, not train")

    monkeypatch.setattr(screen_training, "train", refuse)
    monkeypatch.setattr(role_model, "fit_and_save", refuse)
    monkeypatch.setattr(request_kind, "train", refuse)
    monkeypatch.setattr(screen_training, "_cross_fit", refuse)
    assert Resources().screen_model.read("thanks").small_talk > 0.5


def test_thresholds_are_chosen_on_readings_by_models_that_did_not_see_the_message():
    """Cross-fitting: each message is read by the fold model that did not train on it, so a
    message the shipped model has learned by heart still reads as unseen when thresholds are set."""
    texts = [f"hello there friend number {i}" for i in range(30)] + \
            [f"i want to end it all tonight {i}" for i in range(30)] + ["purple elephant umbrella"]
    labels = ["small_talk:greeting"] * 30 + ["crisis:direct"] * 31
    vectoriser = screen_features.plain(screen_features.ngram_vectoriser().fit(texts))
    fitted, (crisis, *_rest) = screen_training._cross_fit(vectoriser, screen_features.features(vectoriser, texts, None), labels)
    shipped = screen_training._probabilities(fitted, texts, None)[0]
    assert crisis[:30].max() < 0.5 < crisis[30:60].min()  # the held-out readings still tell them apart
    assert shipped[-1] > crisis[-1] + 0.1  # the odd one out: learned by the whole, unseen by its fold


def test_the_screen_reads_a_message_as_scikit_learn_would():
    """The screen counts, weights and scores n-grams itself, from plain data (`plain`), so that
    reading a message needs no scikit-learn: on every kind of vectoriser it ships and on messages
    of every shape, the figures must be scikit-learn's own, to the last bit for the features."""
    import numpy as np
    from sklearn.feature_extraction.text import TfidfVectorizer
    from sklearn.linear_model import LogisticRegression

    corpus = [t for t, _, _ in screen_training.training_messages()][::7] + \
             [t for t, _, _ in screen_training.training_messages(english=False)][::3]
    messages = ["", "hi", "  two   spaces\tand\ttabs\n\nnewlines  ", "I'm on clozapine and so sleepy, would 10mg be enough???",
                "quiero morir esta noche", "Мне очень плохо", "tell me more about NEGATIVE symptoms " * 20,
                "is it safe with alchol? [S03] 😊", "ÉCOLE naïve İstanbul ß", "a", "don't won't y'all's", *corpus[:300]]
    fitted_parts = [*screen_features.ngram_vectoriser().fit(corpus).transformer_list,
                    ("chars 1-3", TfidfVectorizer(analyzer="char_wb", ngram_range=(1, 3), sublinear_tf=True,
                                                  min_df=2).fit(corpus))]
    for name, fitted in fitted_parts:
        ours = screen_features.tfidf(screen_features.plain(fitted), messages)
        expected = fitted.transform(messages)
        assert np.array_equal(ours.toarray(), expected.toarray()), name
    union = screen_features.ngram_vectoriser().fit(corpus)
    x = union.transform(corpus)
    labels = ["crisis" if "die" in t else "talk" if len(t) < 30 else "other" for t in corpus]
    for classes in (labels, ["crisis" if label == "crisis" else "pass" for label in labels]):  # softmax, logistic
        classifier = LogisticRegression(max_iter=500).fit(x, classes)
        ours = screen_features.features(screen_features.plain(union), messages, None)
        assert np.allclose(predict_proba(screen_features.plain(classifier), ours),
                           classifier.predict_proba(union.transform(messages).astype(np.float32)), atol=1e-6)


def test_the_shipped_screen_is_plain_data_read_without_scikit_learn():
    import subprocess
    import sys

    code = ("import sys; from judges.local.resources import Resources; r = Resources(); r.screen_model.read('thanks'); "
            "r.request_kind.read('should i stop my meds'); print(sorted(m for m in sys.modules if m.startswith('sklearn')))")
    assert subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, check=True).stdout.strip() == "[]"


def test_train_if_needed_fits_only_the_checks_missing_or_stale(shipped_copy, monkeypatch):
    """What `make` runs before the app and the tests: nothing when all is up to date, else only
    the stale check, written where it was asked to go."""
    from typer.testing import CliRunner

    from app.cli.main import cli

    fitted = []

    def record(module):
        def fit(_encode, _embedder_name, folder):
            fitted.append((module.NAME, folder))
            return artefacts.ModelCard.model_validate_json(
                (shipped_copy / f"{module.NAME}.card.json").read_text(encoding="utf-8"))
        return fit

    monkeypatch.setattr(screen_training, "train", record(screen_model))
    monkeypatch.setattr(role_model, "fit_and_save", record(role_model))
    monkeypatch.setattr(request_kind, "train", record(request_kind))
    train = ["judges", "train", "--if-needed", "--out", str(shipped_copy)]
    result = CliRunner().invoke(cli, train)
    assert result.exit_code == 0 and fitted == [] and "up to date" in " ".join(result.output.split()), result.output
    card_path = shipped_copy / f"{role_model.NAME}.card.json"
    card_path.write_text(card_path.read_text().replace('"feature_version": ', '"feature_version": 9'))
    result = CliRunner().invoke(cli, train)
    assert result.exit_code == 0 and fitted == [(role_model.NAME, shipped_copy)], result.output


def test_a_clone_of_the_same_code_and_data_copies_the_build_from_the_cache(shipped_copy, tmp_path, monkeypatch):
    """What keeps CI's fresh clone from training for a quarter of an hour: the same inputs copy the
    build byte for byte; another source file, or another build of what it learned from, trains."""
    from app.core.learning import artefact_cache
    from screening import context_model

    cache = tmp_path / "cache"
    reads = (screen_model.NAME,)
    artefact_cache.keep(context_model.NAME, shipped_copy, reads=reads, cache=cache)
    built = (shipped_copy / f"{context_model.NAME}.joblib").read_bytes()
    card = artefacts.ModelCard.model_validate_json((shipped_copy / f"{context_model.NAME}.card.json").read_text())

    def restore(folder):
        return artefact_cache.restore(context_model.NAME, feature_version=card.feature_version,
                                      data_hash=card.data_hash, folder=folder, reads=reads, cache=cache)

    (shipped_copy / f"{context_model.NAME}.joblib").unlink()
    assert restore(shipped_copy) and (shipped_copy / f"{context_model.NAME}.joblib").read_bytes() == built
    fresh = tmp_path / "fresh-clone" / "artefacts"  # a clone holds no artefacts folder yet
    artefact_cache.keep(role_model.NAME, shipped_copy, cache=cache)
    role = artefacts.ModelCard.model_validate_json((shipped_copy / f"{role_model.NAME}.card.json").read_text())
    assert artefact_cache.restore(role_model.NAME, feature_version=role.feature_version, data_hash=role.data_hash,
                                  folder=fresh, cache=cache) and (fresh / f"{role_model.NAME}.joblib").is_file()
    assert not artefact_cache.restore(context_model.NAME, feature_version=card.feature_version + 1,
                                      data_hash=card.data_hash, folder=shipped_copy, reads=reads, cache=cache)
    screen_card = shipped_copy / f"{screen_model.NAME}.card.json"
    original = screen_card.read_text()
    screen_card.write_text(json.dumps({**json.loads(original), "data_hash": "0" * 64}))
    assert not restore(shipped_copy), "built on another screen: must train"
    screen_card.write_text(original)
    [entry] = (cache / context_model.NAME).iterdir()
    inputs = json.loads((entry / "inputs.json").read_text())
    assert any(path.endswith("context_model.py") for path in inputs["files"])
    first = next(iter(inputs["files"]))
    inputs["files"][first] = "0" * 64  # as if that source file differed from this checkout's
    (entry / "inputs.json").write_text(json.dumps(inputs))
    assert not restore(shipped_copy), "built from other code: must train"


def test_train_if_needed_copies_a_cached_build_instead_of_fitting(shipped_copy, monkeypatch):
    from typer.testing import CliRunner

    from app.cli.main import cli
    from app.core.learning import artefact_cache

    fitted = []
    monkeypatch.setattr(role_model, "fit_and_save", lambda *_args: fitted.append(role_model.NAME))
    artefact_cache.keep(role_model.NAME, shipped_copy)
    card_path = shipped_copy / f"{role_model.NAME}.card.json"
    card_path.write_text(card_path.read_text().replace('"feature_version": ', '"feature_version": 9'))
    result = CliRunner().invoke(cli, ["judges", "train", "--if-needed", "--out", str(shipped_copy)])
    assert result.exit_code == 0 and fitted == [] and "copied" in result.output, result.output
    assert artefacts.why_retrain(role_model.NAME, feature_version=role_model.FEATURE_VERSION,
                                 current_hash=role_model.current_hash(), folder=shipped_copy) is None
