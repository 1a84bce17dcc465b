"""Load and validate a knowledge base: a folder of Markdown files with YAML front matter.

Every problem in every file is collected and reported at once, each naming the file and the field,
so an author can fix a whole folder in one pass instead of one error per run.
"""

from __future__ import annotations

import re
from collections.abc import Iterator
from dataclasses import dataclass
from functools import cached_property
from pathlib import Path

import frontmatter
import yaml
from pydantic import BaseModel, ValidationError

from app.core.errors import KnowledgeBaseError
from app.core.medicines import medicines_named
from app.core.text import citations_in, split_sentences
from app.kb.cards import CARDS_FOLDER, AnswerCard, CardMeta
from app.kb.examples import EXAMPLES_FOLDER, ExampleSet, load_examples
from app.kb.schema import Source, SourceMeta, field_name, yaml_problem
from judges.source_audit import SourceFlag, audit

# Files an author keeps beside the sources without meaning them as sources.
IGNORED_NAMES = {"readme.md", "index.md"}


def natural_key(text: str) -> list:
    """S2 before S10: digits compare as numbers."""
    return [int(part) if part.isdigit() else part.lower() for part in re.split(r"(\d+)", text)]


@dataclass(frozen=True)
class Quarantined:
    """A source kept out of the index and away from every model: sentences in it that a judge
    check flags and its front matter does not approve."""

    source: Source
    flags: list[SourceFlag]

    def lines(self) -> list[str]:
        where = display_path(self.source.path) if self.source.path else self.source.id
        return [f"{where}:{f.line or '?'}: {f.reason}" for f in self.flags]


class KnowledgeBase:
    """The validated, trusted sources of one folder, by id; iterates in id order. Quarantined
    sources are listed apart and are never served."""

    def __init__(self, path: Path, sources: list[Source], quarantined: list[Quarantined] | None = None,
                 cards: list[AnswerCard] | None = None, examples: list[ExampleSet] | None = None):
        self.path = path
        self.cards = sorted(cards or [], key=lambda c: natural_key(c.id))
        self.examples = list(examples or [])  # how people ask about each source (and about none)
        self.sources: dict[str, Source] = {
            s.id: s for s in sorted(sources, key=lambda s: natural_key(s.id))
        }
        self.quarantined = sorted(quarantined or [], key=lambda q: natural_key(q.source.id))

    def get(self, source_id: str) -> Source | None:
        return self.sources.get(source_id)

    @cached_property
    def medicines(self) -> frozenset[str]:
        """The medicines its sources speak of: what they say of others is not said of these."""
        return frozenset().union(*(medicines_named(s.body) for s in self))

    def __iter__(self) -> Iterator[Source]:
        return iter(self.sources.values())

    def __len__(self) -> int:
        return len(self.sources)

    def __contains__(self, source_id: object) -> bool:
        return source_id in self.sources

    def ids(self) -> list[str]:
        return list(self.sources)

    def topics(self) -> list[str]:
        return [s.title for s in self]


def source_files(path: Path) -> list[Path]:
    return sorted(
        (p for p in path.glob("*.md") if p.is_file() and p.name.lower() not in IGNORED_NAMES),
        key=lambda p: natural_key(p.name),
    )


def display_path(file: Path) -> str:
    """`knowledge_base/S03-x.md`: short enough to read, long enough to find."""
    return f"{file.parent.name}/{file.name}" if file.parent.name else file.name




def read_front_matter(file: Path, schema: type[BaseModel]) -> tuple[BaseModel | None, str, list[str]]:
    """One Markdown file with YAML front matter: (front matter validated by `schema`, body,
    problems), each problem naming the file and the field."""
    where = display_path(file)
    try:
        post = frontmatter.loads(file.read_text(encoding="utf-8"))
    except UnicodeDecodeError:
        return None, "", [f"{where}: the file is not UTF-8 text"]
    except yaml.YAMLError as error:
        return None, "", [f"{where}: front matter: {yaml_problem(error)}"]
    except Exception as error:  # python-frontmatter raises plain errors for odd headers
        return None, "", [f"{where}: front matter: cannot be read ({type(error).__name__}: {error})"]
    if not post.metadata:
        return None, "", [f"{where}: front matter: missing (start the file with a '---' block "
                          "holding id, title and the other fields)"]
    problems = []
    try:
        meta = schema.model_validate(post.metadata)
    except ValidationError as error:
        meta = None
        for e in error.errors():
            message = e["msg"]
            if e["type"] == "extra_forbidden":
                message = "unknown field (allowed: " + ", ".join(schema.model_fields) + ")"
            problems.append(f"{where}: field '{field_name(e['loc'], '(front matter)')}': {message}")
    body = post.content.strip()
    if not body:
        problems.append(f"{where}: body: empty (write the text below the front matter)")
    return (None if problems else meta), body, problems


def parse_source(file: Path) -> tuple[Source | None, list[str]]:
    """One source file: the source, or the list of its problems."""
    meta, body, problems = read_front_matter(file, SourceMeta)
    if meta is None:
        return None, problems
    if wrong := meta.answer_problems(body):
        return None, [f"{display_path(file)}: field 'answers': {problem}" for problem in wrong]
    return Source(**meta.model_dump(), body=body, path=file), []


def load_knowledge_base(path: Path | str) -> KnowledgeBase:
    """Every source under `path`, validated; raises KnowledgeBaseError listing all problems."""
    path = Path(path)
    if not path.is_dir():
        raise KnowledgeBaseError(
            f"{path}: not a folder. Set `knowledge_base` to a folder of Markdown sources."
        )
    files = source_files(path)
    if not files:
        raise KnowledgeBaseError(
            f"{path}: no Markdown sources (*.md) found. "
            "`cafbot kb ingest` can convert a folder of documents."
        )
    sources, problems, first_file = [], [], {}
    for file in files:
        source, found = parse_source(file)
        problems.extend(found)
        if source is None:
            continue
        if source.id in first_file:
            problems.append(f"{display_path(file)}: field 'id': duplicate id '{source.id}' "
                            f"(also used by {display_path(first_file[source.id])})")
            continue
        first_file[source.id] = file
        sources.append(source)
    _raise_if_any(problems, f"The knowledge base {path} has")
    trusted, quarantined = [], []
    for source in sources:
        flags = unapproved_flags(source)
        if flags:
            quarantined.append(Quarantined(source, flags))
        else:
            trusted.append(source)
    cards, problems = load_cards(path / CARDS_FOLDER, {s.id for s in trusted})
    _raise_if_any(problems, f"The answer cards in {path / CARDS_FOLDER} have")
    examples, problems = load_examples(path / EXAMPLES_FOLDER, {s.id for s in trusted},
                                       {q.source.id for q in quarantined})
    _raise_if_any(problems, f"The example messages in {path / EXAMPLES_FOLDER} have")
    return KnowledgeBase(path, trusted, quarantined, cards, examples)


def _raise_if_any(problems: list[str], what: str) -> None:
    """Every problem at once, one a line, after `what` ("The answer cards in … have")."""
    if problems:
        count = f"{len(problems)} problem{'s' if len(problems) > 1 else ''}"
        raise KnowledgeBaseError(f"{what} {count}:\n  " + "\n  ".join(problems))


def load_cards(folder: Path, source_ids: set[str]) -> tuple[list[AnswerCard], list[str]]:
    """The answer cards in `folder` (none if it does not exist), or every problem: a card must
    cite only trusted sources of this knowledge base, and cite every sentence."""
    cards, problems, seen = [], [], set()
    for file in source_files(folder) if folder.is_dir() else []:
        meta, body, found = read_front_matter(file, CardMeta)
        problems.extend(found)
        if meta is None:
            continue
        card = AnswerCard(**meta.model_dump(), body=body, path=file)
        where = display_path(file)
        if card.id in seen:
            problems.append(f"{where}: field 'id': duplicate card id '{card.id}'")
        seen.add(card.id)
        if unknown := [c for c in card.sources if c not in source_ids]:
            problems.append(f"{where}: cites {', '.join(unknown)}, not a trusted source here")
        if not card.sources:
            problems.append(f"{where}: cites no source")
        if unknown := [r for r in card.reasons if r not in source_ids]:
            problems.append(f"{where}: field 'reasons': {', '.join(unknown)}, not a trusted source here")
        if card.reasons and card.kind != "boundary":
            problems.append(f"{where}: field 'reasons': only a boundary card gives reasons")
        if uncited := card.uncited_sentences():
            problems.append(f"{where}: a sentence has no citation: {uncited[0][:80]!r}")
        problems += _safety_fact_problems(card, where, cards)
        cards.append(card)
    return cards, problems


def _safety_fact_problems(card: AnswerCard, where: str, earlier: list[AnswerCard]) -> list[str]:
    """A card's `safety_fact` is one of its own cited sentences, on a boundary card, and the only
    one declared for each of its kinds of request."""
    if not card.safety_fact:
        return []
    if card.kind != "boundary" or not card.requests:
        return [f"{where}: field 'safety_fact': only a boundary card with requests declares one"]
    if card.safety_fact not in split_sentences(card.body) or not citations_in(card.safety_fact):
        return [f"{where}: field 'safety_fact': not one of the card's cited sentences: {card.safety_fact[:80]!r}"]
    taken = {kind: other.id for other in earlier if other.safety_fact for kind in other.requests}
    return [f"{where}: field 'safety_fact': {other} already declares the safety fact for '{kind}'"
            for kind in card.requests if (other := taken.get(kind))]


def unapproved_flags(source: Source) -> list[SourceFlag]:
    """The source's flagged sentences that its front matter does not approve."""
    text = source.path.read_text(encoding="utf-8") if source.path else None
    approved = {" ".join(s.split()) for s in source.approved_sentences}
    return [f for f in audit(source.body, text) if " ".join(f.sentence.split()) not in approved]
