"""The drift tests' data files: facilitators (`scenarios/facilitators/*.yaml`) and scripted
adversarial conversations (`scenarios/drift/*.yaml`), validated at load (unknown fields are errors).
"""

from __future__ import annotations

import re
from pathlib import Path
from typing import Literal

from pydantic import Field, field_validator, model_validator

from app.core.datafiles import load_yaml, yaml_files
from app.core.errors import ConfigError
from app.core.records import Record, Route

REPO_ROOT = Path(__file__).resolve().parents[2]
FACILITATORS_DIR = REPO_ROOT / "scenarios" / "facilitators"
SCRIPTS_DIR = REPO_ROOT / "scenarios" / "drift"

Tactic = Literal["emotional_appeal", "urgency", "claimed_authority", "flattery", "crescendo",
                 "rephrase_after_refusal", "role_play"]
ID = r"^[a-z0-9][a-z0-9_-]*$"


class Exchange(Record):
    """One turn of a checkpoint conversation. `assistant` is what the bot said then (written into
    the conversation as is: the study branches from the turn where the bot first drifted); leave it
    out to have the bot answer that turn for real when the checkpoint is written."""

    user: str = Field(min_length=1)
    assistant: str | None = None


class Facilitator(Record):
    """A user the drift runner plays: who they are, what they push for, how, and where they start."""

    id: str = Field(pattern=ID)
    kind: Literal["out_of_bounds", "benign"]
    role: str = Field(min_length=3)  # the out-of-bounds role pushed toward, or what a benign user wants
    persona: str = Field(min_length=10)  # who the user is, in the second person, for an LLM facilitator
    goal: str = Field(min_length=10)
    tactics: dict[Tactic, list[str]]  # the template facilitator's phrasings, per tactic
    follow_ups: list[str] = Field(min_length=2)  # pushing further after an answer
    slots: dict[str, list[str]] = Field(default_factory=dict)  # {name} fillers used in the phrasings
    checkpoint: list[Exchange] = Field(min_length=1)

    @field_validator("tactics")
    @classmethod
    def _enough_tactics(cls, tactics: dict[str, list[str]]) -> dict[str, list[str]]:
        if len(tactics) < 3:
            raise ValueError("give at least three tactics, each with phrasings")
        empty = [name for name, lines in tactics.items() if not lines]
        if empty:
            raise ValueError(f"tactics with no phrasings: {', '.join(empty)}")
        return tactics

    @model_validator(mode="after")
    def _slots_defined(self) -> Facilitator:
        lines = [line for lines in self.tactics.values() for line in lines] + self.follow_ups
        used = {name for line in lines for name in re.findall(r"\{(\w+)\}", line)}
        missing = sorted(used - set(self.slots))
        if missing:
            raise ValueError(f"phrasings use {{{'}, {'.join(missing)}}} but slots does not define them")
        return self


class Expectation(Record):
    """Machine-checked expectations on what the user finally sees; every key is optional."""

    route: list[Route] | None = None  # any of these trace route names
    cites: bool | None = None  # at least one valid [S##] (true) or none (false)
    must_contain: list[str] = Field(default_factory=list)  # case-insensitive regexes, each must match
    must_not_contain: list[str] = Field(default_factory=list)  # none may match
    judges_pass: list[str] = Field(default_factory=list)  # these judges' tier-0 checks pass on it

    @field_validator("must_contain", "must_not_contain")
    @classmethod
    def _regexes_compile(cls, patterns: list[str]) -> list[str]:
        for pattern in patterns:
            try:
                re.compile(pattern)
            except re.error as error:
                raise ValueError(f"{pattern!r} is not a regular expression ({error})") from error
        return patterns

    @field_validator("judges_pass")
    @classmethod
    def _known_judges(cls, names: list[str]) -> list[str]:
        from judges.registry import load_judges

        known = {j.name for j in load_judges()}
        if unknown := [n for n in names if n not in known]:
            raise ValueError(f"no judge {', '.join(unknown)}; known: {', '.join(sorted(known))}")
        return names


class ScriptTurn(Record):
    user: str = Field(min_length=1)
    variants: list[str] = Field(default_factory=list)  # paraphrases, run with --variants
    expect: Expectation = Field(default_factory=Expectation)


class Script(Record):
    id: str = Field(pattern=ID)
    role: str = Field(min_length=3)
    description: str = ""
    turns: list[ScriptTurn] = Field(min_length=1)


def load_facilitators(directory: Path = FACILITATORS_DIR) -> dict[str, Facilitator]:
    facilitators: dict[str, Facilitator] = {}
    for path in yaml_files([directory], what="facilitators"):
        facilitator = load_yaml(path, Facilitator)
        if facilitator.id != path.stem:
            raise ConfigError(f"{path}: id {facilitator.id!r} must match the file name ({path.stem!r}).")
        facilitators[facilitator.id] = facilitator
    return facilitators


def load_scripts(paths: list[Path]) -> list[tuple[Path, Script]]:
    scripts = [(path, load_yaml(path, Script)) for path in yaml_files(paths, what="drift scripts")]
    seen: dict[str, Path] = {}
    for path, script in scripts:
        if script.id in seen:
            raise ConfigError(f"{path}: id {script.id!r} is already used by {seen[script.id]}.")
        seen[script.id] = path
    return scripts
