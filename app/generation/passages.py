"""A source read as quotable passages: clean sentences, each list joined to its lead-in, a myth
kept with its correction, and which sentences lean on the one before them."""

from __future__ import annotations

import re
from collections.abc import Sequence
from dataclasses import dataclass

from app.core.medicines import starts_with_medicine
from app.core.text import split_sentences, strip_citations

_MARKUP = re.compile(r"^\s*(?:[-*+]\s+|\d+[.)]\s+|#+\s+)")
_EMPHASIS = re.compile(r"[*_`]{1,3}")
_MYTH = re.compile(r"^myth\b\s*:", re.IGNORECASE)
# A pointer to another source ("(see S34)", "See S27 for more on work and study."): the reader
# sees no source ids, and the answer cites its own.
_SEE_ALSO = re.compile(r"\s*\((?:see|see also)\s+S\d+\)", re.IGNORECASE)
_POINTER = re.compile(r"\bS\d{2,}\b")
# A sentence that opens with one of these leans on the sentence before it, so it reads badly alone.
# So does a quantity standing for people or things named before ("Most are not violent", "Some of
# them…", "Some use them to relax"); "Most people…" names its own.
# Also after an opening condition ("If these happen, get help"; not "if it is urgent", whose "it"
# stands for nothing), and after one that points back ("After that, care may pass…", "Because of
# this…"; not "For those who…", which names its own).
_DANGLING = re.compile(r"^(?:(they|these|this|that|those|it|its|he|she|there|also|so|but|and|or|instead|however|"
                       r"otherwise|therefore|still|yet|besides|then)\b"
                       r"|(if|when|once|unless|while|because|since)\s+(they|these|this|those)\b"
                       r"|(after|before|because of|despite|apart from|besides|on top of|in addition to|instead of|"
                       r"unlike|without|until|for)\s+(this|that|these|those|it|them)\b(?!\s+(who|which|that)\b)"
                       r"|(most|many|some|others|both|all|each|several|few)\s+(?:(of (them|these|those)|are|is|was|were|"
                       r"do|does|have|has|can|will|may|might|find|feel|say|get|need)\b|\w+\s+(them|these|those)\b))",
                       re.IGNORECASE)


# So does one whose opening phrase names what was said before ("To catch this early, …", "For many
# people in this situation, …") or whose first words point to people named before ("Ask them how…",
# "Telling them can…").
_OPENS_ON_BEFORE = re.compile(r"^(?:[^,]{0,50}\b(?:this|these|those|them)\b(?!\s+(?:who|which|that)\b)[^,]{0,30},"
                              r"|(?:\w+\s+){0,2}(?:them|him|her|his|their)\b)", re.IGNORECASE)


# And one that adds to or compares with what came before ("Never stop clozapine on your own
# either.", "Contact your clozapine team before taking any more."): alone, it says too little.
_ADDS_TO = re.compile(r"\b(?:either|too|as well)\W*$|\bany more\b", re.IGNORECASE)


# A pronoun anywhere in a sentence: said of something named before it.
_REFERS = re.compile(r"\b(it|its|they|them|their|this|these|those|he|she|his|her)\b", re.IGNORECASE)


def _list_text(head: str, items: Sequence[str]) -> str:
    """A list joined into one sentence after its lead-in. After a heading that asks a question
    ("What problems can happen?") the first item starts a sentence of its own."""
    if head.endswith("?") and items:
        items = [items[0][:1].upper() + items[0][1:], *items[1:]]
    return f"{head} {'; '.join(items)}."


def leans_back(sentence: str) -> bool:
    """The sentence leans on the one before it ("They can…", "… either."), so it reads badly first."""
    return bool(_DANGLING.match(sentence) or _OPENS_ON_BEFORE.match(sentence) or _ADDS_TO.search(sentence))


# "The tests are most frequent…" after "… regular blood tests.": the same thing, named again.
_DEFINITE = re.compile(r"^(?:the|these|those)\s+([a-z]+)\b", re.IGNORECASE)


def names_again(sentence: str, before: str) -> bool:
    """The sentence opens on a thing the one before it named ("… so people on clozapine have
    regular blood tests. The tests are most frequent in the first months…"): first, it would read
    as said of whatever came before it there."""
    opening = _DEFINITE.match(sentence)
    return bool(opening) and opening.group(1).lower() in re.findall(r"[a-z]+", strip_citations(before).lower())


def leaning_run(sentences: Sequence[str], start: int) -> int:
    """Where the run of sentences that lean on `sentences[start]` ends (exclusive): it and they
    go together ("NMS is… If these happen, get urgent help", "… regular blood tests. The tests
    are most frequent…")."""
    end = start + 1
    while end < len(sentences) and (leans_back(sentences[end]) or names_again(sentences[end], sentences[end - 1])):
        end += 1
    return end


def _stands_as_sentence(sentence: str) -> bool:
    """Not a fragment (a list item's tail, a lead-in with no list): three words or more, and not
    starting in lower case."""
    return len(sentence.split()) >= 3 and not sentence[0].islower()


@dataclass(frozen=True)
class Passage:
    """A sentence of a source as the generator quotes it (a list joined to its lead-in), with the
    section it sits in and its position, so its neighbours can be found."""

    text: str
    section: str
    position: int
    head: str = ""  # a joined list's lead-in ("Signs of NMS include:")
    items: tuple[str, ...] = ()  # a joined list's items
    tail: bool = False  # a list item's later sentence, after the list: said of that item
    named_before: bool = False  # opens on what the sentence before it named (see `names_again`)

    @property
    def leans_back(self) -> bool:
        return self.tail or self.named_before or leans_back(self.text)

    @property
    def introduced_items(self) -> list[str]:
        """Each item as its lead-in introduces it ("Signs of NMS include: fever.")."""
        return [_list_text(self.head, [item]) for item in self.items]

    def with_items(self, keep: Sequence[int]) -> str:
        """The list joined with only the items `keep` names, in their own order."""
        return _list_text(self.head, [self.items[i] for i in sorted(keep)])

    @property
    def is_list(self) -> bool:
        """A list joined to its lead-in ("Signs of NMS include: fever; very stiff muscles; …")."""
        return len(self.items) > 1

    @property
    def lead_in(self) -> str:
        """What a joined list is about: its lead-in or heading, without the colon."""
        return self.head.rstrip(":").strip()



def passages(body: str) -> list[Passage]:
    """A source's body as clean, quotable sentences: headings dropped (each closes a list and
    names the section), list markers and emphasis removed; a paragraph that states a myth is one
    passage, the myth with its correction. A list joins the sentence that
    introduces it, or its heading ("Tips for remembering: a; b; c."), since its items mean little
    alone; an item keeps its first sentence, so the joined list stays one sentence, and its later
    sentences follow the list, each leaning on what comes before it, so quoted only with the list
    ("Constipation: very common… Tell your team if your bowels are not opening as usual…": what to
    do is often said there), unless they speak of the item by a pronoun, which the joined list
    would not resolve ("Guidelines recommend that it is offered…")."""
    found: list[Passage] = []
    section, lead_in, items, tails = "", None, [], []

    def add(text: str, head: str = "", listed: tuple[str, ...] = (), tail: bool = False) -> None:
        named_before = bool(found) and found[-1].section == section and names_again(text, found[-1].text)
        found.append(Passage(text, section, len(found), head, listed, tail, named_before))

    def close_list() -> None:
        nonlocal lead_in, items, tails
        if items and (lead_in or section):
            # A heading that asks a question keeps its question mark ("What helps?"), not "?:".
            head = lead_in or (section if section.endswith("?") else section + ":")
            add(_list_text(head, items), head, tuple(items))
            for sentence in tails:
                add(sentence, tail=True)
        lead_in, items, tails = None, [], []

    myth: list[str] = []  # a "Myth: …" line and the lines of its paragraph, which correct it

    def close_myth() -> None:
        if myth:
            add(" ".join(myth))
            myth.clear()

    for line in body.splitlines():
        if not line.strip():
            close_myth()
            continue
        if line.lstrip().startswith("#"):
            close_myth()
            close_list()
            section = line.lstrip("# ").strip()
            continue
        clean = _SEE_ALSO.sub("", _EMPHASIS.sub("", _MARKUP.sub("", line))).strip()
        if myth or _MYTH.match(clean):
            # A myth is one passage with its correction: alone, "Myth: Bad parenting causes
            # schizophrenia." reads as a fact, and the correction's "It does not." means nothing.
            close_list()
            myth.append(clean)
            continue
        if _MARKUP.match(line):
            first, *rest = split_sentences(clean) or [clean]
            tails += [sentence for sentence in rest if _stands_as_sentence(sentence) and not _REFERS.search(sentence)]
            first = first.rstrip(".;:")
            # Joined into a sentence, an item starts in lower case ("…: take your medicine; a
            # steady level…"), unless it starts with a name or an abbreviation ("Clozapine", "CBT",
            # "CBTp": more than one capital).
            word = first.split()[0]
            named = word == "I" or word.startswith("I'") or starts_with_medicine(first) \
                or sum(c.isupper() for c in word) > 1
            items.append(first if named else first[0].lower() + first[1:])
            continue
        close_list()
        for sentence in split_sentences(clean):
            if _POINTER.search(sentence):
                continue
            if sentence.endswith(":"):
                lead_in = sentence  # its list follows
            elif _stands_as_sentence(sentence):  # fragments are not answers
                add(sentence if sentence[-1] in ".!?" else sentence + ".")
    close_myth()
    close_list()
    return found


def source_sentences(body: str) -> list[str]:
    return [p.text for p in passages(body)]
