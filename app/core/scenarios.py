"""Judge scenarios: one JSON object per line in scenarios/judges/{train,test}/*.jsonl.

Each names the user message, the draft to judge (`response`, null to judge the user message
alone), its sources (objects with their text, or bare ids that the caller resolves against the
knowledge base), earlier turns, and the expected verdict with the rule it is about.

Input-screen scenarios (scenarios/screen) are the conversational kind: `response` is null, and
`route` says where the message must go (crisis, small talk or a question for the knowledge base),
with the `category` and `language` their figures are reported by.
"""

from __future__ import annotations

import json
from collections.abc import Iterable
from pathlib import Path
from typing import Literal

from pydantic import Field, ValidationError

from app.core.config import REPO_ROOT
from app.core.errors import ConfigError
from app.core.records import Record, SourceText, Turn

SCENARIOS_DIR = REPO_ROOT / "scenarios" / "judges"
Expected = Literal["pass", "warn", "reject", "crisis"]  # a verdict; "crisis": the input screen's


class ScenarioError(ConfigError, ValueError):
    """A scenario file is unreadable or a line is not a valid scenario; names file and line."""


class Scenario(Record):
    id: str = Field(min_length=1)
    user: str
    response: str | None = None
    sources: list[SourceText | str] = Field(default_factory=list)
    history: list[Turn] = Field(default_factory=list)
    expected: Expected
    rule: str = ""
    route: Literal["crisis", "small_talk", "boundary", "question"] | None = None
    category: str = ""
    language: str = "en"

    @property
    def source_ids(self) -> list[str]:
        return [s if isinstance(s, str) else s.id for s in self.sources]


def scenario_files(paths: Iterable[Path | str]) -> list[Path]:
    """Files named directly, and the *.jsonl files of folders named, in a stable order."""
    files: list[Path] = []
    for path in map(Path, paths):
        if path.is_dir():
            files += sorted(path.glob("*.jsonl"))
        elif path.is_file():
            files.append(path)
        else:
            raise ScenarioError(f"{path}: no such scenario file or folder")
    return files


def load_scenarios(paths: Iterable[Path | str] | Path | str) -> list[Scenario]:
    """Every scenario in the given files or folders. Raises ScenarioError naming file and line."""
    if isinstance(paths, str | Path):
        paths = [paths]
    scenarios: list[Scenario] = []
    seen: dict[str, str] = {}
    for path in scenario_files(paths):
        try:
            lines = path.read_text(encoding="utf-8").splitlines()
        except (OSError, UnicodeDecodeError) as error:
            raise ScenarioError(f"{path}: cannot read: {error}") from error
        for number, line in enumerate(lines, 1):
            if not line.strip():
                continue
            where = f"{path}:{number}"
            try:
                scenario = Scenario.model_validate(json.loads(line))
            except json.JSONDecodeError as error:
                raise ScenarioError(f"{where}: not valid JSON: {error.msg} (column {error.colno})") from error
            except ValidationError as error:
                problems = "; ".join(f"field '{'.'.join(str(p) for p in e['loc']) or '(line)'}': {e['msg']}"
                                     for e in error.errors())
                raise ScenarioError(f"{where}: {problems}") from error
            if scenario.id in seen:
                raise ScenarioError(f"{where}: duplicate scenario id {scenario.id!r} (first at {seen[scenario.id]})")
            seen[scenario.id] = where
            scenarios.append(scenario)
    return scenarios
