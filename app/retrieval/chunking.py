"""Cut sources into the pieces that are indexed.

Each source gives one "card" chunk (title, summary and keywords: the author's own description of
what the source answers, which is what lets colloquial questions land) and text chunks: the body
split at headings, then into windows of about `chunk_words` words that overlap, so a sentence cut
at a window's edge is whole in the next one. Every text chunk starts with its title and heading,
which tells the embedding what the window is about.
"""

from __future__ import annotations

import hashlib
import re
from collections.abc import Iterable
from typing import Literal

from pydantic import BaseModel, ConfigDict

from app.kb.schema import Source

_HEADING = re.compile(r"^(#{1,6})\s+(.+?)\s*#*\s*$")
_EMPHASIS = re.compile(r"[*_`]+")
_MARKUP = re.compile(r"[>|]+|^\s*(?:[-+]|\d+[.)])\s+", re.MULTILINE)
_LINK = re.compile(r"\[([^\]]+)\]\([^)]*\)")


class Chunk(BaseModel):
    model_config = ConfigDict(extra="forbid", frozen=True)

    id: str  # "<source id>#<n>", stable while the source is unchanged
    source_id: str
    kind: Literal["card", "text"]
    heading: str
    text: str


def plain(text: str) -> str:
    """Markdown to the words a reader sees."""
    text = _EMPHASIS.sub("", _LINK.sub(r"\1", text))
    return re.sub(r"\s+", " ", _MARKUP.sub(" ", text)).strip()


def card_text(source: Source) -> str:
    keywords = f" Keywords: {', '.join(source.keywords)}." if source.keywords else ""
    return f"{source.title}. {plain(source.summary)}{keywords}"


def sections(body: str) -> list[tuple[str, str]]:
    """(heading, text) at every Markdown heading; text before the first heading has heading ''."""
    found: list[tuple[str, list[str]]] = [("", [])]
    in_code = False
    for line in body.splitlines():
        if line.lstrip().startswith("```"):
            in_code = not in_code
        match = None if in_code else _HEADING.match(line)
        if match:
            found.append((plain(match.group(2)), []))
        else:
            found[-1][1].append(line)
    return [(heading, plain("\n".join(lines))) for heading, lines in found
            if plain("\n".join(lines))]


def windows(words: list[str], size: int, overlap: int) -> list[list[str]]:
    """Windows of `size` words, each sharing `overlap` words with the previous one. A short tail
    is merged into the window before it rather than left as a fragment."""
    if len(words) <= size:
        return [words]
    step = max(1, size - min(overlap, size - 1))
    starts = list(range(0, len(words) - overlap, step))
    if len(starts) > 1 and len(words) - starts[-1] < size // 3:
        starts.pop()
    return [words[s: s + size] if s != starts[-1] else words[s:] for s in starts]


def chunk_source(source: Source, chunk_words: int, overlap_words: int) -> list[Chunk]:
    chunks = [Chunk(id=f"{source.id}#0", source_id=source.id, kind="card", heading=source.title,
                    text=card_text(source))]
    for heading, text in sections(source.body):
        # The top heading usually repeats the title; don't say it twice.
        label = source.title if not heading or heading == source.title else f"{source.title} - {heading}"
        for window in windows(text.split(), chunk_words, overlap_words):
            chunks.append(Chunk(id=f"{source.id}#{len(chunks)}", source_id=source.id, kind="text",
                                heading=label, text=f"{label}: {' '.join(window)}"))
    return chunks


def knowledge_base_chunks(sources: Iterable[Source], chunk_words: int, overlap_words: int) -> list[Chunk]:
    """Every chunk of the sources, in their order: what the index holds."""
    return [c for s in sources for c in chunk_source(s, chunk_words, overlap_words)]


def source_fingerprint(source: Source, *extra: object) -> str:
    """Changes whenever anything that ends up in the index changes: the source's text and
    metadata, and the chunking and model settings passed in `extra`."""
    digest = hashlib.sha256(source.model_dump_json(exclude={"path"}).encode())
    for item in extra:
        digest.update(repr(item).encode())
    return digest.hexdigest()[:32]
