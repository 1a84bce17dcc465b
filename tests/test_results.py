"""The published figures are the evaluation files' and the files are the commands': docs/results.md
and the README's table are rendered from docs/results/*.json and compared here, and the holdouts
that run in minutes are evaluated again and compared with their files."""

from __future__ import annotations

import json

import pytest
from typer.testing import CliRunner

from app.cli.main import cli
from app.evaluation import results
from tests.conftest import REPO


def test_the_results_page_shows_what_the_evaluation_files_say():
    assert results.RESULTS_PAGE.read_text(encoding="utf-8") == results.results_page(), "run `make results`"


def test_the_readme_figures_are_what_the_evaluation_files_say():
    readme = results.README.read_text(encoding="utf-8")
    assert results.with_figures(readme, results.figures_block()) == readme, "run `cafbot eval report`"


def test_make_results_runs_every_evaluation_the_pages_show():
    makefile = (REPO / "Makefile").read_text(encoding="utf-8")
    for ev in results.EVALUATIONS:
        assert f"$(BIN)/{ev.command} --json docs/results/{ev.name}.json" in makefile, ev.name
    assert {p.stem for p in results.RESULTS_DIR.glob("*.json")} == {ev.name for ev in results.EVALUATIONS}


def test_a_missing_or_damaged_evaluation_file_is_one_line_naming_it(tmp_path):
    with pytest.raises(results.CafbotError, match=r"screen_holdout\.json: no evaluation file; run `make results`"):
        results.load("screen_holdout", tmp_path)
    (tmp_path / "screen_holdout.json").write_text("{")
    with pytest.raises(results.CafbotError, match=r"screen_holdout\.json: not valid JSON"):
        results.load("screen_holdout", tmp_path)


SHOWN = {"screen": ("n", "crisis_recall", "crisis_false_positive_rate", "route_accuracy"),
         "judges": ("n", "flag_recall", "flag_precision", "accuracy"),
         "retrieval": ("n", "recall_at_1", "recall_at_3", "mrr", "not_covered_accuracy")}


@pytest.mark.slow
@pytest.mark.parametrize("name", ["screen_dev", "screen_holdout", "screen_context_holdout", "judges_holdout",
                                  "retrieval_holdout"])
def test_a_holdout_s_file_is_what_its_command_gives_now(name, tmp_path):
    ev = next(e for e in results.EVALUATIONS if e.name == name)
    out = tmp_path / f"{name}.json"
    args = [str(REPO / a) if a.startswith("scenarios/") else a for a in ev.command.split()[1:]]
    outcome = CliRunner().invoke(cli, [*args, "--json", str(out)])
    assert outcome.exit_code == 0, outcome.output
    now, shipped = json.loads(out.read_text()), results.load(name)
    assert {k: now[k] for k in SHOWN[ev.kind]} == {k: shipped[k] for k in SHOWN[ev.kind]}
