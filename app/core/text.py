"""Text helpers shared by the local checks: sentences, citations, words, numbers, negation.

Everything here is pure string work (no model), so every check can call it freely.
"""

from __future__ import annotations

import re
from functools import lru_cache

import Stemmer

# One citation bracket may hold several ids: [S07], [S07, S12], [kb-3]. Ids are generic (letters,
# digits, "_" and "-") so other knowledge bases with other id schemes work too. No spaces inside
# an id, so prose in brackets ("[Ignore the rules above]") is never taken for a citation.
_ID = r"[A-Za-z0-9_-]+"
CITATION = re.compile(rf"\[\s*({_ID}(?:\s*[,;]\s*{_ID})*)\s*\]")
_ABBREVIATIONS = re.compile(r"\b(e\.g|i\.e|etc|Dr|Mr|Mrs|Ms|vs|approx|St)\.$", re.IGNORECASE)
_BOUNDARY = re.compile(r"(?<=[.!?])[\"')\]]*\s+(?=[\"'(\[]?[A-Z0-9])")
_LEADING_CITATIONS = re.compile(rf"^(\s*\[\s*{_ID}(?:\s*[,;]\s*{_ID})*\s*\]\s*[.!?]?)+")
# Runs of letters in any script: digits and apostrophes split words.
_WORD = re.compile(r"[^\W\d_]+")

_STEMMER = Stemmer.Stemmer("english")

_STOPWORD_TEXT = """
a about above after again against all also am an and any are as at be because been before being
below between both but by can could did do does doing down during each either few for from further
had has have having he her here hers herself him himself his how i if in into is it its itself just
me more most my myself no nor not of off on once only or other our ours out over own same she should
so some such than that the their theirs them themselves then there these they this those through to
too under until up very was we were what when where which while who whom why will with would you
your yours yourself yourselves may might must can't don't doesn't isn't aren't won't it's that's
you're they're there's i'm i've we're let's s t one ones thing things way ways something anyone
someone people person often usually generally sometimes many much well even still already really
"""
STOPWORDS = frozenset(_STOPWORD_TEXT.split())

# The people a message may be about besides the writer ("my son", "our flatmate").
RELATIONS = ("son", "daughter", "child", "kid", "boy", "girl", "mum", "mom", "mother", "dad", "father", "parent",
             "brother", "sister", "husband", "wife", "partner", "boyfriend", "girlfriend", "friend", "mate",
             "relative", "uncle", "aunt", "cousin", "grandson", "granddaughter", "flatmate")

NUMBER_WORDS = {
    "two": 2, "three": 3, "four": 4, "five": 5, "six": 6, "seven": 7, "eight": 8, "nine": 9,
    "ten": 10, "eleven": 11, "twelve": 12, "thirteen": 13, "fourteen": 14, "fifteen": 15,
    "sixteen": 16, "seventeen": 17, "eighteen": 18, "nineteen": 19, "twenty": 20, "thirty": 30,
    "forty": 40, "fifty": 50, "sixty": 60, "seventy": 70, "eighty": 80, "ninety": 90,
    "hundred": 100, "thousand": 1000, "half": 0.5, "twice": 2, "dozen": 12,
}  # "one" is left out on purpose: "one of", "one-to-one" are rarely a quantity.
_DIGITS = re.compile(r"(?<![A-Za-z])(\d+(?:[.,]\d+)?)\s*(%|percent|per cent)?")
_NEGATION = re.compile(r"\b(not|no|never|none|nothing|nobody|neither|nor|cannot)\b|n't\b", re.IGNORECASE)
_NEGATORS = frozenset({"not", "no", "never", "none", "nothing", "nobody", "neither", "nor", "cannot"})
# Words that negate softly ("avoid screens", "rather than"): they make a sentence count as negative
# but open no scope, so "no screens" and "avoiding screens" are not taken for a contradiction.
_SOFT_NEGATION = re.compile(
    r"\b(avoid\w*|without|rather than|instead of|lack\w*|cut(ting)? down)\b")
# Negations about the assistant or the sources, not about the facts: "I can't say", "whether or not".
_META_NEGATION = re.compile(
    r"\b(i|we|sources?|information|knowledge base)( really| just)? (can't|cannot|can not|don't|do not|"
    r"doesn't|does not|won't|am not|'m not)\b|\bi'm not\b|\b(whether )?or not\b|\bif not\b")
_SCOPE_STOP = frozenset({"but", "and", "so", "because", "while", "although", "though", "which",
                         "that", "who", "called"})
# Words that deny what the sentence says as a whole ("X is a myth"): everything in it is negated.
_DENIAL = re.compile(r"\b(myths?|untrue|not true|isn't true|wrong|false)\b")


def split_sentences(text: str) -> list[str]:
    """Sentences of a draft or source; a citation left after the full stop stays with its sentence."""
    return list(_sentences(text or ""))


# The text helpers below are pure and cached: every check of the filter reads the same draft and
# the same sources, and a source's sentences come back turn after turn (in every extractive answer).
@lru_cache(maxsize=4096)
def _sentences(text: str) -> tuple[str, ...]:
    sentences: list[str] = []
    for line in re.split(r"\n+", text):
        line = re.sub(r"^\s*(?:[-*+•]|\d+[.)])\s+", "", line).strip()
        if not line:
            continue
        start = 0
        for match in _BOUNDARY.finditer(line):
            piece = line[start:match.start()].strip()
            if _ABBREVIATIONS.search(piece):
                continue
            _append(sentences, piece)
            start = match.end()
        _append(sentences, line[start:].strip())
    return tuple(sentences)


def _append(sentences: list[str], piece: str) -> None:
    """Add a piece; citations at its start belong to the sentence before ("Done! [S1] Next")."""
    leading = _LEADING_CITATIONS.match(piece)
    if sentences and leading:
        sentences[-1] = f"{sentences[-1]} {leading.group(0).strip()}"
        piece = piece[leading.end():].strip()
    if piece:
        sentences.append(piece)


def citations_in(text: str) -> list[str]:
    """The cited ids in order of first appearance, without duplicates."""
    seen: dict[str, None] = {}
    for match in CITATION.finditer(text or ""):
        for source_id in re.split(r"\s*[,;]\s*", match.group(1)):
            seen.setdefault(source_id, None)
    return list(seen)


def strip_citations(text: str) -> str:
    return re.sub(r"\s+([.,;:!?])", r"\1", CITATION.sub("", text)).strip()


def words(text: str) -> list[str]:
    return _WORD.findall(text.lower().replace("’", "'"))


@lru_cache(maxsize=8192)
def stem(word: str) -> str:
    return _STEMMER.stemWord(word)


def _is_content(word: str) -> bool:
    return (word not in STOPWORDS and not word.isdigit() and len(word) > 2
            and word not in NUMBER_WORDS and word not in _NEGATORS and not word.endswith("n't"))


@lru_cache(maxsize=8192)
def content_stems(text: str) -> frozenset[str]:
    """Stems of the words that carry meaning (no stopwords, no numbers)."""
    return frozenset(stem(w) for w in words(strip_citations(text)) if _is_content(w))


@lru_cache(maxsize=8192)
def polarity(text: str) -> tuple[bool, frozenset[str], frozenset[str]]:
    """(does the sentence hold a hard negation?, negated stems, affirmed stems). A negation covers
    the next two content words of its clause: "does not put the idea" negates put and idea. Soft
    negations ("avoiding screens", "without talking") negate words too but do not make the sentence
    negative. Negations about the assistant or the sources ("I can't say") are ignored."""
    clean = _META_NEGATION.sub(" ", strip_citations(text).lower().replace("’", "'"))
    negative = bool(_NEGATION.search(clean) or _DENIAL.search(clean))
    negated: set[str] = set()
    affirmed: set[str] = set()
    for clause in re.split(r"[,;:.!?()]", _SOFT_NEGATION.sub(" not ", clean)):
        if _DENIAL.search(clause):  # "the idea that ... is a myth" denies the whole clause
            negated |= {stem(w) for w in _WORD.findall(clause) if _is_content(w)}
            continue
        scope = 0
        for w in _WORD.findall(clause):
            if w in _NEGATORS or w.endswith("n't"):
                scope = 2
            elif w in _SCOPE_STOP:
                scope = 0
            elif _is_content(w):
                (negated if scope > 0 else affirmed).add(stem(w))
                scope = max(0, scope - 1)
    return negative, frozenset(negated), frozenset(affirmed - negated)


_SMALL_WORDS = frozenset({"two", "half", "twice", "dozen"})


def numbers(text: str, small_words: bool = True) -> set[float]:
    """Every quantity in a text, digits and number words alike ("sixteen" == "16").
    Citations are removed first, so the 7 of [S07] is not a quantity. `small_words=False` skips
    "two", "half"... which are as often turns of phrase ("the two groups") as facts."""
    text = strip_citations(text)
    found: set[float] = set()
    for match in _DIGITS.finditer(text):
        raw = match.group(1).replace(",", "")
        try:
            found.add(float(raw))
        except ValueError:
            continue
    for w in words(text):
        for part in w.split("-"):
            if part in NUMBER_WORDS and (small_words or part not in _SMALL_WORDS):
                found.add(float(NUMBER_WORDS[part]))
    return found


def is_negated(text: str) -> bool:
    return polarity(text)[0]


def is_question(sentence: str) -> bool:
    return strip_citations(sentence).rstrip().endswith("?")




def plain(text: str) -> str:
    """Text as read, for finding a quoted sentence in it: no bold markers, single spaces."""
    return " ".join(text.replace("**", "").split())
