"""What a deployment says about itself: the service's name, what its knowledge base covers in
plain words, and who it is for. Every fixed reply, prompt, banner and page that names the domain
reads it, so a second deployment (another condition, its own sources) is a file, not a fork.

It lives beside the knowledge base, in `profile.yaml`. Without one, the wording is generic ("the
topics in this knowledge base") and never names a condition the knowledge base may not cover.
"""

from __future__ import annotations

from functools import cache
from pathlib import Path

from pydantic import Field

from app.core.datafiles import load_yaml
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
    # Words that name the condition, its names first ("schizophrenia", "psychosis", "psychotic"):
    # with them a clause only tells the asker's situation ("my son has schizophrenia"), and example
    # messages are also learnt after openings that name it by its first two. None given: `topic`'s
    # words, when the profile names one.
    topic_words: list[str] = Field(default_factory=list)
    # A boundary reply's safety fact when no answer card and no source sentence gives one for the
    # kind of request ("Decisions about your treatment are made with your care team.").
    safety_fact: str = ""
    @property
    def condition_words(self) -> list[str]:
        """The words that name the condition; none for the generic profile."""
        if self.topic_words:
            return self.topic_words
        return [] if self.topic == Profile.model_fields["topic"].default else self.topic.lower().split()

    def wording(self) -> dict[str, str]:
        """The placeholders fixed replies and prompts may use."""
        return {"service": self.service, "topic": self.topic, "audience": self.audience, "covers": self.covers,
                "for_example": f', for example "{self.example_question}"' if self.example_question else ""}


def load_profile(kb_path: Path) -> Profile:
    """The profile beside the knowledge base at `kb_path`, or the generic one when there is none."""
    return _load(Path(kb_path).resolve() / PROFILE_FILE)


@cache
def _load(path: Path) -> Profile:
    return load_yaml(path, Profile) if path.is_file() else Profile()
