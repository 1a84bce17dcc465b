"""Split a message into the questions it asks, so that each finds its own sources.

Generic punctuation and connective heuristics, no vocabulary of question words:
- list items (numbered or bulleted lines) are separate questions;
- a sentence ending in "?" closes a question; statements before it stay with it as context
  ("My son was diagnosed. What treatment will he get?" is one question), and so does a statement
  after the last question ("Is it my fault? I smoked weed."), unless it opens with a connective
  ("... ? Also, how is it diagnosed");
- inside a question, a clause joined by ", and" / ", but" / ", also" / "; " / " and also "
  is a question of its own when it is long enough to stand alone.
"""

from __future__ import annotations

import re

_LIST_ITEM = re.compile(r"^\s*(?:\d+[.)]|[-*•])\s+(.+)$")
_SENTENCE = re.compile(r"[^.?!;]+(?:[.?!;]+|$)")
_CLAUSE = re.compile(r",\s*(?:and|but|also|plus)\s+(?:also\s+)?|;\s*|\s+and\s+also\s+"
                     r"|\s+and\s+separately,?\s+", re.IGNORECASE)
_LEADING = re.compile(r"^(?:and|also|plus|but|so|separately)\b[\s,]*", re.IGNORECASE)
_CONNECTIVE = re.compile(r"^(?:and|also|plus|separately|another thing)\b", re.IGNORECASE)


def _clean(text: str) -> str:
    text = _LEADING.sub("", text.strip(" \t\n,;-")).strip()
    return _LEADING.sub("", text).strip()


def _words(text: str) -> int:
    return len(re.findall(r"\w+", text))


def _questions(text: str) -> list[str]:
    """Sentences grouped so that each group ends with its question mark."""
    groups, pending = [], ""
    for sentence in (s.strip() for s in _SENTENCE.findall(text)):
        if not sentence:
            continue
        pending = f"{pending} {sentence}".strip()
        if sentence.endswith("?") or sentence.endswith(";"):
            groups.append(pending)
            pending = ""
    if pending:
        if groups and not _CONNECTIVE.match(pending):
            groups[-1] = f"{groups[-1]} {pending}"  # context or an afterthought
        else:
            groups.append(pending)
    return groups


def _clauses(question: str, min_words: int) -> list[str]:
    """Split at connectives; a piece too short to stand alone is glued back, separator and all."""
    pieces = re.split(f"({_CLAUSE.pattern})", question, flags=re.IGNORECASE)
    merged: list[str] = [pieces[0]]
    for separator, piece in zip(pieces[1::2], pieces[2::2], strict=True):
        if _words(piece) < min_words or _words(merged[-1]) < min_words:
            merged[-1] = f"{merged[-1]}{separator}{piece}"
        else:
            merged.append(piece)
    return [m.strip() for m in merged if m.strip()]


def split_parts(text: str, *, min_words: int = 3, max_parts: int = 4) -> list[str]:
    """The sub-questions of `text`, in order; the whole text when it asks one thing."""
    text = text.strip()
    if not text:
        return []
    lines = [m.group(1) for line in text.splitlines() if (m := _LIST_ITEM.match(line))]
    groups = lines if len(lines) >= 2 else _questions(" ".join(text.split()))
    parts = [c for g in groups for c in _clauses(g, min_words)]
    parts = [p for p in (_clean(p) for p in parts) if _words(p) >= 1]
    # Fragments too short to search on their own ride along with their neighbour.
    joined: list[str] = []
    for part in parts:
        if (joined and _words(part) < min_words) or (joined and _words(joined[-1]) < min_words):
            joined[-1] = f"{joined[-1]} {part}"
        else:
            joined.append(part)
    if len(joined) > max_parts:  # more than we can answer well: keep the first ones separate
        joined = [*joined[: max_parts - 1], " ".join(joined[max_parts - 1:])]
    return joined or [text]
