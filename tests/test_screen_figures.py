"""The README's figures for the conversation holdout are what the command gives: the holdout is
screened again through `cafbot judges eval` and each file's figures are compared with the table."""

from __future__ import annotations

import json
import re

import pytest
from typer.testing import CliRunner

from app.cli.main import cli
from judges.evaluate import ScenarioResult, summarise
from tests.conftest import REPO

HOLDOUT = REPO / "scenarios" / "screen" / "in_context" / "holdout"
README = (REPO / "README.md").read_text(encoding="utf-8")
_ROW = re.compile(r"^\| `(?P<file>[\w-]+\.jsonl)` \| (?P<n>\d+) \| (?P<recall>[\d.]+|–) \| "
                  r"(?P<false>[\d.]+ %|–) \| (?P<route>[\d.]+) \|", re.MULTILINE)


def readme_rows() -> dict[str, tuple[int, str, str, str]]:
    """(n, crisis recall, false alarms, right route) by holdout file, as the README's table shows them
    ("–" where the file has no crisis, or nothing but crises)."""
    table = README.split("scenarios/screen/in_context/holdout --tiers 0", 1)[1].split("\n\n", 2)[1]
    return {m["file"]: (int(m["n"]), m["recall"], m["false"], m["route"]) for m in _ROW.finditer(table)}


def test_the_readme_shows_a_row_for_every_file_of_the_holdout():
    assert set(readme_rows()) == {p.name for p in HOLDOUT.glob("*.jsonl")}


@pytest.mark.slow
def test_the_conversation_holdout_figures_are_what_the_command_gives(tmp_path):
    out = tmp_path / "holdout.json"
    result = CliRunner().invoke(cli, ["judges", "eval", str(HOLDOUT), "--tiers", "0", "--json", str(out)])
    assert result.exit_code == 0, result.output
    results = [ScenarioResult.model_validate(r) for r in json.loads(out.read_text())["per_scenario"]]
    for name, shown in readme_rows().items():
        ids = {json.loads(line)["id"] for line in (HOLDOUT / name).read_text(encoding="utf-8").splitlines() if line.strip()}
        found = [r for r in results if r.id in ids]
        report = summarise(found)
        crises = any(r.expected == "crisis" for r in found)
        ordinary = any(r.expected != "crisis" for r in found)
        given = (report.n, f"{report.crisis_recall:.2f}" if crises else "–",
                 f"{100 * report.crisis_false_positive_rate:.1f} %" if ordinary else "–", f"{report.route_accuracy:.2f}")
        assert given == shown, name
