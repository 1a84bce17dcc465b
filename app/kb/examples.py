"""Example messages: how people really ask about each source, in their own words.

A knowledge base's `examples/` folder holds one YAML file per source (`source: S02`, `messages:
[…]`) and, optionally, one of messages that no source answers (`source: none`). Retrieval learns
from them which source a message is about ("the radio presenters are sending her messages" is the
source on delusions although it shares no word with it) and when it is about none of them. They
are optional: a knowledge base without them is read by retrieval alone.
"""

from __future__ import annotations

from pathlib import Path

import yaml
from pydantic import BaseModel, ConfigDict, Field, ValidationError, field_validator

from app.core.datafiles import parse_yaml
from app.kb.schema import ID_PATTERN, field_name, yaml_problem

EXAMPLES_FOLDER = "examples"
NOT_COVERED = "none"  # the `source` of messages that no source answers


class ExampleSet(BaseModel):
    model_config = ConfigDict(extra="forbid", str_strip_whitespace=True)

    source: str = Field(pattern=ID_PATTERN)  # a source id, or "none"
    messages: list[str] = Field(min_length=1)

    @field_validator("messages")
    @classmethod
    def _no_blank_messages(cls, messages: list[str]) -> list[str]:
        cleaned = [" ".join(str(m).split()) for m in messages]
        if any(not m for m in cleaned):
            raise ValueError("contains an empty message")
        return cleaned


def load_examples(folder: Path, source_ids: set[str], quarantined: set[str]) -> tuple[list[ExampleSet], list[str]]:
    """The example sets in `folder` (none if it does not exist), or every problem, each naming the
    file. A set for a quarantined source is left out with it: that source is never served."""
    sets, problems = [], []
    for file in sorted(folder.glob("*.yaml")) if folder.is_dir() else []:
        where = f"{folder.name}/{file.name}"
        try:
            data = parse_yaml(file.read_text(encoding="utf-8"))
            found = ExampleSet.model_validate(data)
        except yaml.YAMLError as error:
            problems.append(f"{where}: {yaml_problem(error)}")
            continue
        except ValidationError as error:
            for e in error.errors():
                problems.append(f"{where}: field '{field_name(e['loc'], '(file)')}': {e['msg']} "
                                "(a file holds `source: <id or none>` and `messages: [...]`)")
            continue
        if found.source in quarantined:
            continue
        if found.source != NOT_COVERED and found.source not in source_ids:
            problems.append(f"{where}: field 'source': '{found.source}' is not a source here "
                            f"(use a source id or '{NOT_COVERED}')")
            continue
        sets.append(found)
    return sets, problems
