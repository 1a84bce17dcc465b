"""The knowledge-base file format: YAML front matter (`SourceMeta`) above a Markdown body.

Ids are what the bot cites as [S07], so they are short and made of letters, digits, `_` or `-`.
"""

from __future__ import annotations

from pathlib import Path

from pydantic import BaseModel, ConfigDict, Field, field_validator

from app.core.text import plain

ID_PATTERN = r"^[A-Za-z][A-Za-z0-9_-]{0,31}$"


class SourceMeta(BaseModel):
    """The front matter of one source file. Unknown fields are errors: a typo must not pass."""

    model_config = ConfigDict(extra="forbid", str_strip_whitespace=True)

    id: str = Field(pattern=ID_PATTERN)
    title: str = Field(min_length=1)
    summary: str = Field(min_length=1)
    keywords: list[str] = Field(default_factory=list)
    references: list[str] = Field(default_factory=list)
    # Questions this source answers, in a user's words: offered as examples and follow-up
    # suggestions, so each must be answered by this source's text.
    questions: list[str] = Field(default_factory=list)
    # For a question above, the body's sentences that answer it (quoted verbatim): an answer to a
    # question asked like it leads with them, though they may share few words with it ("why do I
    # still have to take it if I feel fine?" and "Feeling well is often a sign that the medicine is
    # working").
    answers: dict[str, list[str]] = Field(default_factory=dict)
    # True when the summary or keywords were drafted automatically (`cafbot kb ingest`):
    # the author should read them before the source is relied on.
    needs_review: bool = False
    # Sentences a reviewer has read and approved although a judge check flags them (a quoted
    # myth, say). Any other flagged sentence quarantines the source: see judges/source_audit.py.
    approved_sentences: list[str] = Field(default_factory=list)

    @field_validator("keywords", "references", "questions")
    @classmethod
    def _no_blank_items(cls, items: list[str]) -> list[str]:
        cleaned = [str(item).strip() for item in items]
        if any(not item for item in cleaned):
            raise ValueError("contains an empty item")
        return cleaned

    @field_validator("questions")
    @classmethod
    def _questions_are_questions(cls, questions: list[str]) -> list[str]:
        if bad := [q for q in questions if not q.rstrip().endswith("?")]:
            raise ValueError(f"a question must end with '?': {bad[0]!r}")
        return questions

    def answer_problems(self, body: str) -> list[str]:
        """What is wrong with `answers` for this body: a question not among `questions`, no
        sentence, or a sentence not found in the body (bold markers and spacing aside)."""
        text = plain(body)
        return ([f"{q!r} is not one of this source's questions" for q in self.answers if q not in self.questions]
                + [f"{q!r} lists no sentence" for q, sentences in self.answers.items() if not sentences]
                + [f"not a sentence of the body: {s!r}" for sentences in self.answers.values() for s in sentences
                   if plain(s) not in text])


class Source(SourceMeta):
    """A loaded source: its front matter, its Markdown body and the file it came from."""

    body: str = Field(min_length=1)
    path: Path | None = None

    @property
    def meta(self) -> SourceMeta:
        return SourceMeta(**self.model_dump(include=set(SourceMeta.model_fields)))


def field_name(loc: tuple, whole: str) -> str:
    """A validation error's place as an author reads it ("questions[2]"); `whole` when it is
    the whole document."""
    name = ""
    for part in loc:
        name += f"[{part}]" if isinstance(part, int) else (f".{part}" if name else str(part))
    return name or whole


def yaml_problem(error: Exception) -> str:
    """A YAML error in one line, with its line number when the parser knows it."""
    mark = getattr(error, "problem_mark", None)
    line = f" (line {mark.line + 1})" if mark is not None else ""
    problem = getattr(error, "problem", None) or str(error).splitlines()[0]
    return f"invalid YAML{line}: {problem}"
