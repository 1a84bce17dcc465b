"""Bring your own knowledge base: documents in, valid sources out, drafts marked for review."""

from __future__ import annotations

from pathlib import Path

import pytest
from typer.testing import CliRunner

from app.cli.kb import cli
from app.core.errors import KnowledgeBaseError
from app.core.models import RoleClient
from app.core.models.scripted import ScriptedChatModel
from app.kb import load_knowledge_base
from app.kb.ingest import (
    DraftSummary,
    first_sentences,
    ingest,
    split_markdown,
    split_plain,
    write_sources,
)

GUIDE = """# Living with diabetes

A short introduction.

## Checking your blood sugar

Check your blood sugar as your nurse showed you. Write the numbers down.

## Insulin

Insulin lowers blood sugar. Keep it in the fridge.
"""

TWO_TOPICS = """# Foot care

Look at your feet every day. See a podiatrist every year.

# Eye checks

Have your eyes checked every year for retinopathy. It does not hurt.
"""


def documents(folder: Path) -> Path:
    (folder / "more").mkdir(parents=True)
    (folder / "guide.md").write_text(GUIDE, encoding="utf-8")
    (folder / "care.md").write_text(TWO_TOPICS, encoding="utf-8")
    (folder / "more" / "food.txt").write_text(
        "Healthy eating\nEat plenty of vegetables. Cut down on sugary drinks. Choose wholegrain bread.\n",
        encoding="utf-8")
    (folder / ".hidden").mkdir()
    (folder / ".hidden" / "skip.md").write_text("# Hidden\n\nNot a document.\n", encoding="utf-8")
    return folder


def test_markdown_with_several_top_headings_is_split_at_them():
    sections = split_markdown(TWO_TOPICS, "Fallback", max_words=1000)
    assert [title for title, _ in sections] == ["Foot care", "Eye checks"]
    assert "podiatrist" in sections[0][1] and "retinopathy" in sections[1][1]


def test_single_title_keeps_a_short_document_whole():
    sections = split_markdown(GUIDE, "Fallback", max_words=1000)
    assert len(sections) == 1
    title, body = sections[0]
    assert title == "Living with diabetes"
    assert "## Insulin" in body and "A short introduction." in body


def test_long_document_is_split_below_its_title():
    sections = split_markdown(GUIDE, "Fallback", max_words=10)
    assert [title for title, _ in sections] == [
        "Living with diabetes: Checking your blood sugar", "Living with diabetes: Insulin"]
    assert "A short introduction." in sections[0][1]  # a short preamble joins the first section


def test_plain_text_title_line_and_fallback():
    assert split_plain("Healthy eating\nEat vegetables.", "F")[0][0] == "Healthy eating"
    assert split_plain("This first line is a sentence.\nMore.", "Fallback")[0][0] == "Fallback"


def test_first_sentences_is_plain_and_bounded():
    text = "## Heading\n\n**Bold** start here. Second sentence. Third one. Fourth is too many."
    assert first_sentences(text) == "Bold start here. Second sentence. Third one."
    assert len(first_sentences("word " * 200, max_words=20).split()) <= 21


def test_ingest_offline_drafts_and_marks_for_review(tmp_path):
    sources = ingest(documents(tmp_path / "docs"))
    assert [s.id for s in sources] == ["S01", "S02", "S03", "S04"]
    assert [s.title for s in sources] == ["Foot care", "Eye checks", "Living with diabetes", "Healthy eating"]
    assert all(s.needs_review for s in sources)
    assert sources[0].summary.startswith("Look at your feet every day.")
    assert sources[3].keywords and all(k.strip() for k in sources[3].keywords)

    written = write_sources(sources, tmp_path / "out")
    assert written[0].name == "S01-foot-care.md"
    kb = load_knowledge_base(tmp_path / "out")
    assert len(kb) == 4 and all(s.needs_review for s in kb)
    assert kb.get("S02").body.startswith("# Eye checks")


def test_existing_sources_are_kept_without_review(tmp_path):
    folder = tmp_path / "docs"
    folder.mkdir()
    (folder / "a.md").write_text("---\ntitle: Kept\nsummary: Written by the author.\n---\nBody text.\n",
                                 encoding="utf-8")
    (source,) = ingest(folder, id_prefix="K")
    assert (source.id, source.title, source.summary, source.needs_review) == (
        "K01", "Kept", "Written by the author.", False)


def test_llm_drafts_summaries_when_configured(tmp_path):
    folder = tmp_path / "docs"
    folder.mkdir()
    (folder / "care.md").write_text(TWO_TOPICS, encoding="utf-8")
    model = ScriptedChatModel([
        DraftSummary(summary="How to look after your feet.", keywords=["feet", "podiatrist"]),
        TimeoutError("the model timed out"),  # the second draft falls back to first sentences
    ])
    sources = ingest(folder, client=RoleClient(role="screener", model_name="scripted", llm=model))
    assert sources[0].summary == "How to look after your feet."
    assert sources[0].keywords == ["feet", "podiatrist"]
    assert sources[1].summary.startswith("Have your eyes checked")
    assert all(s.needs_review for s in sources)
    assert len(model.prompts) == 2 and "podiatrist" in str(model.prompts[0][-1].content)


def test_refuses_to_overwrite_without_force(tmp_path):
    sources = ingest(documents(tmp_path / "docs"))
    write_sources(sources, tmp_path / "out")
    with pytest.raises(KnowledgeBaseError, match="--force"):
        write_sources(sources, tmp_path / "out")
    write_sources(sources, tmp_path / "out", force=True)


def test_empty_folder_is_an_error(tmp_path):
    with pytest.raises(KnowledgeBaseError, match="no Markdown or text documents"):
        ingest(tmp_path)


def test_cli_ingest_then_check(tmp_path):
    runner = CliRunner()
    out = tmp_path / "kb"
    result = runner.invoke(cli, ["ingest", str(documents(tmp_path / "docs")), "--out", str(out), "--no-llm"])
    assert result.exit_code == 0, result.output
    assert "4 sources written" in result.output
    checked = runner.invoke(cli, ["check", str(out)])
    assert checked.exit_code == 0, checked.output
    assert "4 sources" in checked.output and "to review" in checked.output
