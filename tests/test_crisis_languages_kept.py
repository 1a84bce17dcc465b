"""The lexicon of other languages starts from what an earlier process worked out (each concept's
literal set, on disk) and compiles a concept's pattern only when a message holds one of its
literals: it must find exactly what the lexicon compiled in full finds, and an edited or broken
file must never be read with an old entry."""

from __future__ import annotations

import json
import re
from pathlib import Path

import pytest

from app.core.learning import derived_cache
from screening import crisis_languages

TRAIN = Path(__file__).resolve().parents[1] / "scenarios" / "screen" / "train"


def _forget() -> None:
    for cached in (crisis_languages.languages, crisis_languages._compiled, crisis_languages._needs_key):
        cached.cache_clear()


@pytest.fixture
def kept(tmp_path, monkeypatch):
    """An empty place for kept entries; the process's lexicon is read afresh, and again after."""
    monkeypatch.setattr(derived_cache, "CACHE_DIR", tmp_path / "derived")
    _forget()
    yield tmp_path / "derived"
    _forget()


def _messages() -> list[str]:
    messages = [text for lang in crisis_languages.languages().values()
                for text in (*lang.examples.crisis, *lang.examples.safe)]
    for path in sorted(TRAIN.glob("*.jsonl")):
        messages += [json.loads(line)["user"] for line in path.read_text(encoding="utf-8").splitlines() if line.strip()]
    return messages


def _needs() -> dict[tuple[str, str], frozenset[str] | None]:
    return {(code, c.name): c.needs for code, concepts, _ in crisis_languages._compiled() for c in concepts}


def _compiled_count() -> int:
    return sum("compiled" in c.regex.__dict__ for _, concepts, _ in crisis_languages._compiled() for c in concepts)


def test_a_kept_lexicon_finds_what_the_lexicon_worked_out_in_full_finds(kept):
    worked_out = _needs()  # nothing kept yet: every pattern compiled and analysed
    assert _compiled_count() == len(worked_out) > 150
    assert len(list(kept.glob("*.json"))) == 1
    messages = _messages()
    assert len(messages) > 5000
    found_in_full = [crisis_languages.find_concept(m) for m in messages]
    _forget()
    assert _needs() == worked_out
    assert _compiled_count() == 0
    assert [crisis_languages.find_concept(m) for m in messages] == found_in_full


def test_an_english_question_compiles_almost_none_of_the_lexicon(kept):
    _needs()
    _forget()
    assert crisis_languages.find_concept("what is clozapine and will it make me gain weight?") is None
    assert _compiled_count() <= 3
    assert crisis_languages.find_concept("Ich habe eben die ganze Packung Tabletten geschluckt") == (
        "de", "overdose_taken", "ganze packung tabletten geschluckt")


def test_a_damaged_entry_is_worked_out_again(kept):
    worked_out = _needs()
    for entry in kept.glob("*.json"):
        entry.write_text('{"de": [1, 2', encoding="utf-8")
    _forget()
    assert _needs() == worked_out
    assert _compiled_count() == len(worked_out)


def test_an_edited_file_with_a_broken_pattern_still_fails_with_an_entry_kept(kept, tmp_path, monkeypatch):
    _needs()  # the shipped file's entry is kept
    broken = tmp_path / "crisis_languages.yaml"
    text = crisis_languages.DATA.read_text(encoding="utf-8")
    broken.write_text(text.replace("      die_wish:\n", "      die_wish:\n        - '(unclosed'\n", 1), encoding="utf-8")
    monkeypatch.setattr(crisis_languages, "DATA", broken)
    _forget()
    with pytest.raises(re.error, match="missing"):
        crisis_languages.languages()
