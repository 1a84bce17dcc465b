"""What a deployment says about itself: the service's name, what its knowledge base covers in
plain words, and who it is for. Every fixed reply, prompt, banner and page that names the domain
reads it, so a second deployment (another condition, its own sources) is a file, not a fork.

It lives beside the knowledge base, in `profile.yaml`. Without one, the wording is generic ("the
topics in this knowledge base") and never names a condition the knowledge base may not cover.
"""

from __future__ import annotations

import re
from functools import cache
from pathlib import Path

import yaml
from pydantic import Field, ValidationError

from app.core.errors import ConfigError
from app.core.medicines import international_name, medicines_named
from app.core.records import Record

PROFILE_FILE = "profile.yaml"


class Profile(Record):
    service: str = "cafbot"
    topic: str = "the topics in this knowledge base"  # "schizophrenia", "bipolar disorder"
    audience: str = "patients, families and friends"
    covers: str = "the topics its sources cover"  # the capabilities reply's list
    example_question: str = ""  # the empty message's hint; none: no example given
    title: str = "Questions and answers"  # the app's page
    input_hint: str = "Ask a question…"  # the app's input box
    # What makes a medicine's side effect an emergency, for the medical-emergency reply: in general,
    # and per medicine (by international name, lower case), named only when the message names it.
    general_warning_signs: str = "a high temperature with very stiff muscles or confusion, or a sudden rash"
    medicine_warning_signs: dict[str, str] = Field(default_factory=dict)

    def warning_signs(self, text: str) -> str:
        """The warning signs to name for a message: the general ones, and those of each medicine
        the message names (never another medicine's)."""
        named = {international_name(n) for n in medicines_named(text)}
        named |= {m for m in self.medicine_warning_signs if re.search(rf"\b{re.escape(m)}\b", text, re.IGNORECASE)}
        own = [f"on {m}, {self.medicine_warning_signs[m]}" for m in sorted(named) if m in self.medicine_warning_signs]
        return "; ".join([self.general_warning_signs, *own])

    def wording(self) -> dict[str, str]:
        """The placeholders fixed replies and prompts may use."""
        return {"service": self.service, "topic": self.topic, "audience": self.audience, "covers": self.covers,
                "for_example": f', for example "{self.example_question}"' if self.example_question else ""}


def load_profile(kb_path: Path) -> Profile:
    """The profile beside the knowledge base at `kb_path`, or the generic one when there is none."""
    return _load(Path(kb_path).resolve() / PROFILE_FILE)


@cache
def _load(path: Path) -> Profile:
    if not path.is_file():
        return Profile()
    try:
        data = yaml.safe_load(path.read_text(encoding="utf-8")) or {}
        return Profile.model_validate(data)
    except yaml.YAMLError as error:
        raise ConfigError(f"{path}: not valid YAML ({str(error).splitlines()[0]})") from error
    except ValidationError as error:
        first = error.errors()[0]
        field = ".".join(str(part) for part in first["loc"]) or "(the file)"
        raise ConfigError(f"{path}: field {field!r}: {first['msg']}") from error
