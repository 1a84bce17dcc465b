"""`cafbot kb check | index | eval` end to end, and the default knowledge base's retrieval quality."""

from __future__ import annotations

import json
from pathlib import Path

import pytest
from typer.testing import CliRunner

from app.cli.kb import DEFAULT_QUESTIONS, cli
from app.core.config import DEFAULT_KNOWLEDGE_BASE, Settings
from app.core.errors import CafbotError
from app.kb import load_knowledge_base
from app.retrieval.evaluate import load_questions, run, summarise

KEYS = {"recall_at_1", "recall_at_3", "mrr", "not_covered_accuracy", "latency_ms_p50", "latency_ms_p95", "n"}

SMALL = {
    "C01": ("Clozapine blood tests", "Why people taking clozapine need regular blood tests.",
            "Clozapine can lower white blood cells. Blood tests are weekly at first, then less often."),
    "C02": ("Sleep problems", "How to sleep better at night.",
            "Keep a regular bedtime, avoid caffeine in the evening and put screens away before bed."),
    "C03": ("Coping with voices", "Practical ways to cope with hearing voices.",
            "Humming, music through headphones and talking to someone you trust can help with voices."),
}


def small_kb(folder: Path) -> Path:
    folder.mkdir(parents=True)
    for sid, (title, summary, body) in SMALL.items():
        (folder / f"{sid}.md").write_text(f"---\nid: {sid}\ntitle: {title}\nsummary: {summary}\n---\n{body}\n",
                                          encoding="utf-8")
    return folder


def questions(path: Path) -> Path:
    rows = [
        {"id": "1", "question": "why do i need blood tests on clozapine", "expected": ["C01"], "kind": "plain"},
        {"id": "2", "question": "i can't sleep at night, what helps", "expected": ["C02"], "kind": "plain"},
        {"id": "3", "question": "the voices are loud, how do i cope, and how do i sleep better",
         "expected": ["C03", "C02"], "kind": "multi"},
        {"id": "4", "question": "how do i renew my passport online", "expected": "not_covered", "kind": "not_covered"},
    ]
    path.write_text("\n".join(json.dumps(r) for r in rows) + "\n", encoding="utf-8")
    return path


@pytest.fixture
def runner(tmp_path, monkeypatch) -> CliRunner:
    monkeypatch.setenv("CAFBOT_DATA_DIR", str(tmp_path / "data"))
    return CliRunner()


def test_check_default_knowledge_base(runner):
    result = runner.invoke(cli, ["check"])
    assert result.exit_code == 0, result.output
    assert f"OK: {len(load_knowledge_base(DEFAULT_KNOWLEDGE_BASE))} sources" in result.output


def test_check_reports_the_broken_file_and_field(runner, tmp_path):
    kb = small_kb(tmp_path / "kb")
    (kb / "C02.md").write_text("---\nid: C02\ntitle: Sleep\n---\nBody.\n", encoding="utf-8")
    result = runner.invoke(cli, ["check", str(kb)])
    assert result.exit_code == 1
    assert "kb/C02.md: field 'summary'" in result.output


def test_question_file_errors_name_the_line(tmp_path):
    path = tmp_path / "q.jsonl"
    path.write_text('{"id": "1", "question": "x", "expected": ["S01"]}\n{"id": "2", "question": "y"}\n')
    with pytest.raises(CafbotError, match=r"q\.jsonl:2"):
        load_questions(path)


@pytest.mark.slow
def test_index_then_eval_writes_the_metrics(runner, tmp_path):
    kb = small_kb(tmp_path / "kb")
    first = runner.invoke(cli, ["index", "--kb", str(kb)])
    assert first.exit_code == 0, first.output
    assert "added 3" in first.output
    second = runner.invoke(cli, ["index", "--kb", str(kb)])
    assert "unchanged 3" in second.output and "0 chunks embedded" in second.output

    out = tmp_path / "metrics" / "eval.json"
    result = runner.invoke(cli, ["eval", str(questions(tmp_path / "q.jsonl")), "--kb", str(kb), "--json", str(out)])
    assert result.exit_code == 0, result.output
    assert "recall_at_3" in result.output
    metrics = json.loads(out.read_text())
    assert set(metrics) >= KEYS
    assert metrics["n"] == 4
    assert metrics["recall_at_1"] == 1.0 and metrics["recall_at_3"] == 1.0 and metrics["mrr"] == 1.0
    assert metrics["not_covered_accuracy"] == 1.0
    assert 0 < metrics["latency_ms_p50"] <= metrics["latency_ms_p95"]


@pytest.mark.slow
def test_default_knowledge_base_meets_the_retrieval_targets(tmp_path, embedder):
    from app.retrieval import open_identifier

    identifier = open_identifier(Settings(data_dir=tmp_path / "data"), embedder)
    report = summarise(run(identifier, load_questions(DEFAULT_QUESTIONS)))
    assert report.recall_at_3 >= 0.90, report
    assert report.not_covered_accuracy >= 0.80, report  # speed is bench/bench_retrieval.py's, not a test's
