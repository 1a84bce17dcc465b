"""Loading and validating a knowledge base: every problem named by file and field, all at once."""

from __future__ import annotations

from pathlib import Path

import pytest

from app.core.config import DEFAULT_KNOWLEDGE_BASE
from app.core.errors import KnowledgeBaseError
from app.kb import load_knowledge_base

GOOD = """---
id: {id}
title: {title}
summary: What {title} covers.
keywords: [one, two]
references:
  - "A guideline"
---
# {title}

Some body text about {title}.
"""


def write(folder: Path, name: str, text: str) -> Path:
    folder.mkdir(parents=True, exist_ok=True)
    path = folder / name
    path.write_text(text, encoding="utf-8")
    return path


def good(folder: Path, source_id: str, title: str) -> Path:
    return write(folder, f"{source_id}-x.md", GOOD.format(id=source_id, title=title))


def problems(folder: Path) -> str:
    with pytest.raises(KnowledgeBaseError) as caught:
        load_knowledge_base(folder)
    return str(caught.value)


def test_loads_sources_in_natural_id_order(tmp_path):
    for sid, title in [("S10", "Ten"), ("S2", "Two"), ("S1", "One")]:
        good(tmp_path, sid, title)
    write(tmp_path, "README.md", "# Notes for authors, not a source\n")
    kb = load_knowledge_base(tmp_path)
    assert [s.id for s in kb] == ["S1", "S2", "S10"]
    assert kb.topics() == ["One", "Two", "Ten"]
    assert kb.get("S2").title == "Two" and kb.get("S99") is None
    source = kb.get("S10")
    assert source.keywords == ["one", "two"] and source.references == ["A guideline"]
    assert source.body.startswith("# Ten") and source.path.name == "S10-x.md"
    assert source.needs_review is False


def test_missing_summary_names_file_and_field(tmp_path):
    write(tmp_path, "S03-x.md", "---\nid: S03\ntitle: Three\n---\nBody.\n")
    message = problems(tmp_path)
    assert f"{tmp_path.name}/S03-x.md: field 'summary'" in message
    assert "Field required" in message


def test_blank_summary_and_unknown_field(tmp_path):
    write(tmp_path, "S01-x.md", "---\nid: S01\ntitle: One\nsummary: '  '\nsumary: typo\n---\nBody.\n")
    message = problems(tmp_path)
    assert "S01-x.md: field 'summary'" in message
    assert "S01-x.md: field 'sumary': unknown field" in message


def test_malformed_yaml_names_file_and_line(tmp_path):
    write(tmp_path, "S04-x.md", "---\nid: S04\ntitle: [unclosed\nsummary: x\n---\nBody.\n")
    message = problems(tmp_path)
    assert "S04-x.md: front matter: invalid YAML" in message
    assert "line" in message


def test_missing_front_matter(tmp_path):
    write(tmp_path, "notes.md", "# Just a heading\n\nNo front matter here.\n")
    assert "notes.md: front matter: missing" in problems(tmp_path)


def test_empty_body(tmp_path):
    write(tmp_path, "S05-x.md", "---\nid: S05\ntitle: Five\nsummary: Covers five.\n---\n\n   \n")
    assert "S05-x.md: body: empty" in problems(tmp_path)


def test_duplicate_id_names_both_files(tmp_path):
    good(tmp_path, "S01", "One")
    write(tmp_path, "S01-again.md", GOOD.format(id="S01", title="Again"))
    message = problems(tmp_path)
    assert "field 'id': duplicate id 'S01'" in message
    assert "S01-again.md" in message and "S01-x.md" in message


def test_bad_id_and_keyword_item(tmp_path):
    write(tmp_path, "bad.md", "---\nid: 'S 1!'\ntitle: T\nsummary: S\nkeywords: [ok, '']\n---\nBody.\n")
    message = problems(tmp_path)
    assert "bad.md: field 'id'" in message
    assert "bad.md: field 'keywords'" in message


def test_all_problems_reported_at_once(tmp_path):
    good(tmp_path, "S01", "One")
    write(tmp_path, "S02-x.md", "---\nid: S02\ntitle: Two\n---\nBody.\n")
    write(tmp_path, "S03-x.md", "---\nid: S03\ntitle: Three\nsummary: Three.\n---\n")
    message = problems(tmp_path)
    assert "2 problems" in message
    assert "S02-x.md: field 'summary'" in message and "S03-x.md: body: empty" in message


def test_not_a_folder_and_empty_folder(tmp_path):
    assert "not a folder" in problems(tmp_path / "missing")
    (tmp_path / "empty").mkdir()
    assert "no Markdown sources" in problems(tmp_path / "empty")


def test_default_knowledge_base_is_valid():
    kb = load_knowledge_base(DEFAULT_KNOWLEDGE_BASE)
    assert len(kb) >= 1
    assert len({s.id for s in kb}) == len(kb)
    assert all(s.summary and s.body and s.title for s in kb)


def test_answers_link_a_source_s_questions_to_its_own_sentences(tmp_path):
    linked = GOOD.format(id="S01", title="One").replace(
        "references:", 'questions:\n  - "What is one?"\nanswers:\n  "What is one?":\n    - "Some body text about One."\nreferences:')
    write(tmp_path, "S01-x.md", linked)
    assert load_knowledge_base(tmp_path).get("S01").answers == {"What is one?": ["Some body text about One."]}
    write(tmp_path, "S01-x.md", linked.replace('  "What is one?":\n', '  "What is two?":\n'))
    assert "S01-x.md: field 'answers': 'What is two?' is not one of this source's questions" in problems(tmp_path)
    write(tmp_path, "S01-x.md", linked.replace('- "Some body', '- "No body'))
    assert "S01-x.md: field 'answers': not a sentence of the body: 'No body text about One.'" in problems(tmp_path)
