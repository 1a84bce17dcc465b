"""`cafbot score …` as a team would use it on the committed reference drift run: add the run,
assign two raters, hand out their sheets, take them back, analyse and report."""

from __future__ import annotations

import json
from pathlib import Path

import pandas as pd
import pytest
from typer.testing import CliRunner

from app.cli.main import cli

REFERENCE_RUN = Path(__file__).resolve().parents[1] / "conversations" / "drift-offline-reference"


@pytest.fixture
def runner(tmp_path, monkeypatch):
    monkeypatch.setenv("CAFBOT_DATA_DIR", str(tmp_path / "data"))
    return CliRunner()


def _ok(runner, *args):
    result = runner.invoke(cli, list(args))
    assert result.exit_code == 0, result.output
    return result.output


def test_score_a_drift_run_from_sheets_to_report(runner, tmp_path):
    assert "192 new item(s)" in _ok(runner, "score", "add-run", str(REFERENCE_RUN))
    assert "0 new item(s)" in _ok(runner, "score", "add-run", str(REFERENCE_RUN))  # added once
    run_id = "drift-offline-reference"
    output = _ok(runner, "score", "assign", run_id, "--raters", "ann,bob", "--per-item", "2", "--seed", "1")
    assert "ann: 192 new item(s)" in output and "bob: 192 new item(s)" in output

    for rater, shift in (("ann", 0), ("bob", 1)):
        sheet = tmp_path / f"{rater}.csv"
        _ok(runner, "score", "export", "--rater", rater, "--out", str(sheet))
        frame = pd.read_csv(sheet, dtype=str, keep_default_na=False)
        assert "condition" not in frame.columns
        # A stand-in rater: 4 for answers that name the care team, else 1; bob one lower on a few.
        names_team = frame["answer"].str.contains("care team|prescriber|doctor", case=False)
        scores = names_team.map({True: 4, False: 1})
        scores.iloc[: 20 * shift] -= 1
        frame["score"] = scores.astype(str)
        frame.to_csv(sheet, index=False)
        assert "192 score(s) saved" in _ok(runner, "score", "import", str(sheet))

    assert "ann" in _ok(runner, "score", "status", run_id)
    table = tmp_path / "scores.csv"
    _ok(runner, "score", "table", run_id, "--out", str(table))
    analysis_json = tmp_path / "analysis.json"
    output = _ok(runner, "score", "analyse", str(table), "--json", str(analysis_json))
    assert "within-1 agreement" in output
    analysis = json.loads(analysis_json.read_text())
    assert (analysis["n_items"], analysis["n_raters"], analysis["n_scores"]) == (192, 2, 384)
    assert analysis["within1_agreement"] == 1.0  # the two raters never differ by more than 1
    assert set(analysis["by_role_condition"]) == {f"{r}/{c}" for r in (
        "diagnostician", "medication_advisor", "natural_cure", "prompt_injection", "therapist",
        "worried_parent", "older_patient", "teenager") for c in ("on", "off")}
    assert set(analysis["by_role_condition"]["therapist/on"]["median_by_turn"]) == {"1", "2", "3", "4"}

    report_dir = tmp_path / "report"
    _ok(runner, "score", "report", run_id, "--out", str(report_dir))
    report = (report_dir / "report.md").read_text()
    assert "## By role and condition" in report and "median_by_turn.png" in report
    assert (report_dir / "shares.png").read_bytes()[:4] == b"\x89PNG"
    assert pd.read_csv(report_dir / "by_role_and_condition.csv").shape[0] == 16


def test_mistakes_get_one_line_naming_them(runner, tmp_path):
    no_run = runner.invoke(cli, ["score", "add-run", str(tmp_path)])
    assert no_run.exit_code == 1 and "no drift run here" in no_run.output
    unknown = runner.invoke(cli, ["score", "assign", "nothing", "--raters", "ann"])
    assert unknown.exit_code == 1 and "no collection 'nothing'" in unknown.output
    _ok(runner, "score", "add-run", str(REFERENCE_RUN))
    spaces = runner.invoke(cli, ["score", "assign", "drift-offline-reference", "--raters", "ann smith"])
    assert spaces.exit_code == 1 and "rater 'ann smith'" in spaces.output
    too_many = runner.invoke(cli, ["score", "assign", "drift-offline-reference", "--raters", "ann", "--per-item", "2"])
    assert too_many.exit_code == 1 and "--per-item 2" in too_many.output
    no_judge = runner.invoke(cli, ["score", "prerate", "drift-offline-reference"])
    assert no_judge.exit_code == 1 and "needs a judge model" in no_judge.output
    bad = tmp_path / "bad.csv"
    bad.write_text("item_id,rater,score\nit-1,ann,7\n")
    analysed = runner.invoke(cli, ["score", "analyse", str(bad)])
    assert analysed.exit_code == 1 and "row 2, column score" in analysed.output
