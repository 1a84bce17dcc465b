"""Bring your own knowledge base: turn a folder of Markdown or plain-text documents into sources.

Markdown is split at its top heading level (a single top heading is the document's title, and
then a long document is split at the level below); plain text gives one source per file. Ids are
assigned in file order. Summaries and keywords are drafted by the configured LLM when there is
one, otherwise from the first sentences and the most distinctive terms, and every drafted source
is marked `needs_review: true` for the author to check.
"""

from __future__ import annotations

import re
from pathlib import Path

import frontmatter
import yaml
from pydantic import BaseModel, Field

from app.core.errors import KnowledgeBaseError, ModelError
from app.core.models import RoleClient, call_structured
from app.core.records import Record
from app.kb.loader import display_path, load_knowledge_base, natural_key
from app.kb.schema import Source

SUFFIXES = {".md", ".markdown", ".txt"}
_HEADING = re.compile(r"^(#{1,6})\s+(.+?)\s*#*\s*$")
_SENTENCE_END = re.compile(r"(?<=[.!?])\s+")


class Draft(BaseModel):
    """One section of one document, before it becomes a source."""

    title: str
    body: str
    origin: str  # file (and heading) it came from
    summary: str = ""
    keywords: list[str] = Field(default_factory=list)
    references: list[str] = Field(default_factory=list)


class DraftSummary(Record):
    summary: str = Field(description="2-3 plain sentences: what the text covers and which questions it answers")
    keywords: list[str] = Field(description="5-10 words or short phrases a reader might search for")


def _humanise(stem: str) -> str:
    words = re.sub(r"[_\-]+", " ", re.sub(r"^\d+[\s_\-]*", "", stem)).strip()
    return words[:1].upper() + words[1:] if words else stem


def _headings(lines: list[str]) -> list[tuple[int, int, str]]:
    """(line number, level, text) of Markdown headings outside code fences."""
    found, fenced = [], False
    for number, line in enumerate(lines):
        if line.lstrip().startswith("```"):
            fenced = not fenced
        elif not fenced and (m := _HEADING.match(line)):
            found.append((number, len(m.group(1)), m.group(2).strip()))
    return found


def split_markdown(text: str, fallback_title: str, max_words: int) -> list[tuple[str, str]]:
    """(title, body) sections of one Markdown document."""
    lines = text.splitlines()
    heads = _headings(lines)
    if not heads:
        return [(fallback_title, text.strip())]
    top = min(level for _, level, _ in heads)
    at_top = [h for h in heads if h[1] == top]
    doc_title, prefix = fallback_title, ""
    if len(at_top) == 1:  # one top heading: the document's title
        doc_title = at_top[0][2]
        lower = [h for h in heads if h[1] > top]
        if len(text.split()) <= max_words or not lower:
            body = "\n".join(lines[at_top[0][0] + 1:]).strip()
            preamble = "\n".join(lines[: at_top[0][0]]).strip()
            return [(doc_title, f"{preamble}\n\n{body}".strip())]
        next_level = min(level for _, level, _ in lower)
        at_top, prefix = [h for h in lower if h[1] == next_level], f"{doc_title}: "
    sections = []
    first_line = at_top[0][0]
    preamble = "\n".join(ln for ln in lines[:first_line] if not _HEADING.match(ln)).strip()
    if len(preamble.split()) >= 30:
        sections.append((doc_title, preamble))
        preamble = ""
    for i, (start, _, heading) in enumerate(at_top):
        end = at_top[i + 1][0] if i + 1 < len(at_top) else len(lines)
        body = "\n".join(lines[start + 1: end]).strip()
        if i == 0 and preamble:
            body = f"{preamble}\n\n{body}".strip()
        if body:
            sections.append((f"{prefix}{heading}", body))
    return sections


def split_plain(text: str, fallback_title: str) -> list[tuple[str, str]]:
    lines = text.strip().splitlines()
    first = lines[0].strip() if lines else ""
    if first and len(first.split()) <= 12 and not first.endswith((".", ",", ";", ":")) and len(lines) > 1:
        return [(first, "\n".join(lines[1:]).strip())]
    return [(fallback_title, text.strip())]


def first_sentences(body: str, max_words: int = 50, max_sentences: int = 3) -> str:
    """The opening sentences of the body, as plain text: the offline draft of a summary."""
    prose = " ".join(ln.strip(" -*#>") for ln in body.splitlines() if ln.strip() and not _HEADING.match(ln))
    prose = re.sub(r"[*_`]+", "", " ".join(prose.split()))
    summary = ""
    for sentence in _SENTENCE_END.split(prose)[:max_sentences]:
        if summary and len((summary + " " + sentence).split()) > max_words:
            break
        summary = f"{summary} {sentence}".strip()
    words = summary.split()
    return " ".join(words[:max_words]) + ("..." if len(words) > max_words else "")


def distinctive_terms(bodies: list[str], per_source: int = 8) -> list[list[str]]:
    """The terms that set each text apart from the others (tf-idf), as draft keywords."""
    from sklearn.feature_extraction.text import TfidfVectorizer

    if not bodies:
        return []
    # Single words: tf-idf bigrams straddle sentence ends ("vegetables cut") too often.
    vectorizer = TfidfVectorizer(stop_words="english", sublinear_tf=True,
                                 token_pattern=r"(?u)\b[a-zA-Z][a-zA-Z\-]{2,}\b")
    try:
        matrix = vectorizer.fit_transform(bodies)
    except ValueError:  # nothing but stop words
        return [[] for _ in bodies]
    vocabulary = vectorizer.get_feature_names_out()
    result = []
    for row in matrix:
        dense = row.toarray()[0]
        result.append([vocabulary[i] for i in dense.argsort()[::-1][:per_source] if dense[i] > 0])
    return result


def read_documents(folder: Path, max_words: int = 1200) -> list[Draft]:
    if not folder.is_dir():
        raise KnowledgeBaseError(f"{folder}: not a folder of documents to ingest.")
    files = sorted((p for p in folder.rglob("*") if p.is_file() and p.suffix.lower() in SUFFIXES
                    and not any(part.startswith(".") for part in p.relative_to(folder).parts)),
                   key=lambda p: natural_key(str(p.relative_to(folder))))
    drafts, problems = [], []
    for file in files:
        try:
            post = frontmatter.loads(file.read_text(encoding="utf-8"))
        except (UnicodeDecodeError, yaml.YAMLError) as error:
            problems.append(f"{display_path(file)}: cannot be read ({type(error).__name__})")
            continue
        meta, text, fallback = post.metadata or {}, post.content, _humanise(file.stem)
        if meta.get("title") and meta.get("summary"):  # already a source: keep it whole
            sections = [(str(meta["title"]), text.strip())]
        elif file.suffix.lower() == ".txt":
            sections = split_plain(text, str(meta.get("title") or fallback))
        else:
            sections = split_markdown(text, str(meta.get("title") or fallback), max_words)
        for title, body in sections:
            if not body.strip():
                continue
            whole = len(sections) == 1
            drafts.append(Draft(
                title=title, body=body, origin=display_path(file) + ("" if whole else f" # {title}"),
                summary=str(meta.get("summary") or "") if whole else "",
                keywords=[str(k) for k in meta.get("keywords") or []] if whole else [],
                references=[str(r) for r in meta.get("references") or []],
            ))
    if problems:
        raise KnowledgeBaseError("Some documents cannot be ingested:\n  " + "\n  ".join(problems))
    if not drafts:
        raise KnowledgeBaseError(f"{folder}: no Markdown or text documents with content found.")
    return drafts


def draft_with_llm(client: RoleClient, draft: Draft) -> DraftSummary | None:
    from langchain_core.messages import HumanMessage, SystemMessage

    messages = [
        SystemMessage("You write the catalogue entry of one knowledge-base source: a short, plain, "
                      "factual summary of what it covers and the questions it answers, and search "
                      "keywords. Use only what the text says."),
        HumanMessage(f"Title: {draft.title}\n\n{draft.body[:6000]}"),
    ]
    try:
        result, _ = call_structured(client, DraftSummary, messages, purpose="draft_summary")
    except ModelError:
        return None  # the offline draft takes over; the author reviews it either way
    return result if result.summary.strip() else None


def ingest(folder: Path, *, client: RoleClient | None = None, id_prefix: str = "S") -> list[Source]:
    """Sources drafted from the documents under `folder`; nothing is written."""
    drafts = read_documents(folder)
    terms = distinctive_terms([d.body for d in drafts])
    width = max(2, len(str(len(drafts))))
    sources = []
    for number, (draft, keywords) in enumerate(zip(drafts, terms, strict=True), start=1):
        needs_review = not draft.summary
        summary, chosen_keywords = draft.summary, draft.keywords
        if needs_review:
            llm = draft_with_llm(client, draft) if client is not None else None
            summary = llm.summary if llm else first_sentences(draft.body) or draft.title
            chosen_keywords = [k.strip() for k in (llm.keywords if llm else keywords) if k.strip()]
        sources.append(Source(id=f"{id_prefix}{number:0{width}d}", title=draft.title, summary=summary,
                              keywords=chosen_keywords, references=draft.references,
                              needs_review=needs_review, body=draft.body))
    return sources


def slug(title: str, max_length: int = 40) -> str:
    text = re.sub(r"[^a-z0-9]+", "-", title.lower()).strip("-")
    return text[:max_length].rstrip("-") or "source"


def write_sources(sources: list[Source], out: Path, *, force: bool = False) -> list[Path]:
    """Write one Markdown file per source, then load the folder back to prove it is valid."""
    if out.exists() and any(out.glob("*.md")) and not force:
        raise KnowledgeBaseError(f"{out}: already holds Markdown files; choose another --out or pass --force.")
    out.mkdir(parents=True, exist_ok=True)
    written = []
    for source in sources:
        meta = source.meta.model_dump(exclude_defaults=False)
        for optional in ("needs_review", "approved_sentences"):  # written only when they say something
            if not meta[optional]:
                meta.pop(optional)
        header = yaml.safe_dump(meta, sort_keys=False, allow_unicode=True, width=100)
        body = source.body if source.body.lstrip().startswith("#") else f"# {source.title}\n\n{source.body}"
        path = out / f"{source.id}-{slug(source.title)}.md"
        path.write_text(f"---\n{header}---\n{body.rstrip()}\n", encoding="utf-8")
        written.append(path)
    load_knowledge_base(out)
    return written
