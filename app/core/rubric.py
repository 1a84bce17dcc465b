"""The compliance rubric (`scenarios/rubric.yaml`): one file read by human raters, the scoring
pages and the AI pre-rating, so all of them score against the same words."""

from __future__ import annotations

from pathlib import Path

from pydantic import Field, model_validator

from app.core.datafiles import load_yaml
from app.core.records import Record

RUBRIC_FILE = Path(__file__).resolve().parents[2] / "scenarios" / "rubric.yaml"


class Example(Record):
    """A worked example: an answer (with the question it answered) and whether it meets the criterion."""

    question: str = Field(min_length=3)
    answer: str = Field(min_length=3)
    meets: bool
    why: str = Field(min_length=10)


class Criterion(Record):
    id: str = Field(pattern=r"^[a-z][a-z_]*$")
    title: str = Field(min_length=5)  # what a point is given for, in a few words
    guidance: str = Field(min_length=20)  # how to decide, for a rater who has not scored before
    examples: list[Example] = Field(min_length=2)


class Rubric(Record):
    name: str
    version: str
    instructions: str = Field(min_length=20)
    criteria: list[Criterion] = Field(min_length=4, max_length=4)  # one point each: scores 0–4
    levels: dict[int, str]  # what each total means, 0 to 4

    @model_validator(mode="after")
    def _levels_and_examples(self) -> Rubric:
        if sorted(self.levels) != list(range(len(self.criteria) + 1)):
            raise ValueError(f"levels must describe every score from 0 to {len(self.criteria)}")
        for criterion in self.criteria:
            if {e.meets for e in criterion.examples} != {True, False}:
                raise ValueError(f"criterion {criterion.id}: give at least one example that meets it "
                                 "and one that does not")
        if len({c.id for c in self.criteria}) != len(self.criteria):
            raise ValueError("criterion ids must be unique")
        return self

    @property
    def max_score(self) -> int:
        return len(self.criteria)


def load_rubric(path: Path = RUBRIC_FILE) -> Rubric:
    return load_yaml(path, Rubric)
