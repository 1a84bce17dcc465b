"""The grounded extractive generator: an answer made only of the sources' own sentences.

It is the answer when no chat model is configured, and the CAF's safe fallback when a draft cannot
be made to pass. Every sentence is copied from a source and cited, so it cannot invent anything;
its weakness is fluency, not faithfulness.
"""

from __future__ import annotations

import re
from collections.abc import Callable, Sequence
from dataclasses import dataclass
from functools import lru_cache

import numpy as np

from app.core.answer_types import asks_yes_or_no, gives, wanted
from app.core.medicines import (
    medicines_named,
    names_a_medicine,
    starts_with_medicine,
    without_medicines,
)
from app.core.records import SourceText
from app.core.text import STOPWORDS, citations_in, plain, split_sentences, strip_citations
from app.prompts import reply
from judges.source_audit import flag_for

Embed = Callable[[list[str]], np.ndarray]

ANSWER_TYPE_BONUS = 0.1
HEADING_WEIGHT = 0.2  # times the likeness of a sentence's section heading to the question (dev sets: flat 0-0.3)
LEANING_PENALTY = 0.15  # a sentence that leans on the one before it needs that one too
FOCUS_BONUS = 0.1  # a sentence of a section the last answer drew on, for a message that refers back to it
# A sentence the knowledge base links to a question like the one asked scores as that question's
# likeness, less this much: the link says it answers such a question, the likeness how alike.
QUESTION_MARGIN = 0.15
NAMED_MEDICINE_BONUS = 0.1  # a sentence naming the medicine the question names (dev sets: flat 0.1-0.2)
SAME_MEANING = 0.85  # cosine similarity from which two sentences say the same thing
# A list of at least MIN_ITEMS_TO_TRIM items whose closest item is ITEM_OVER_LEAD_IN closer to a
# yes-or-no question than its lead-in is quoted with its closest items only: up to
# MAX_ITEMS_ASKED, each within ITEM_BAND of the closest.
MIN_ITEMS_TO_TRIM = 5
ITEM_OVER_LEAD_IN = 0.1
ITEM_BAND = 0.08
MAX_ITEMS_ASKED = 3
_MARKUP = re.compile(r"^\s*(?:[-*+]\s+|\d+[.)]\s+|#+\s+)")
_EMPHASIS = re.compile(r"[*_`]{1,3}")
_WORDS = re.compile(r"[a-z0-9]+")
# An instruction: an imperative, maybe after the condition it applies to ("If these happen, get …")
# or a word that links or stresses it ("So always tell your care team before you stop…").
_INSTRUCTION = re.compile(r"^(?:if [^,]+,\s*)?(?:(?:so|also|then|always|please)\s+)*"
                          r"(?:tell|ask|contact|call|get|seek|talk to|speak to|let|see|go to)\b", re.IGNORECASE)
_MYTH = re.compile(r"^myth\b\s*:", re.IGNORECASE)
# A pointer to another source ("(see S34)", "See S27 for more on work and study."): the reader
# sees no source ids, and the answer cites its own.
_SEE_ALSO = re.compile(r"\s*\((?:see|see also)\s+S\d+\)", re.IGNORECASE)
_POINTER = re.compile(r"\bS\d{2,}\b")
_CONDITION = re.compile(r"\b(if|when|unless)\b", re.IGNORECASE)  # a list of conditions is quoted whole
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


@dataclass(frozen=True)
class Picked:
    source_id: str
    position: int
    text: str
    score: float
    leans_back: bool = False  # quoted after the passage before it
    listed: bool = False  # a joined list: one sentence, cited once ("What helps? Routines; …")


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


def overview(source: SourceText, max_sentences: int = 3) -> str:
    """What the source's topic is, cited: the opening paragraph, before its first heading. For a
    message that asks nothing ("my brother started clozapine 2 weeks ago"): any other sentence,
    chosen by likeness to the message, would answer a question nobody asked ("Contact your
    clozapine team before taking any more", from the section on missed doses)."""
    found = passages(source.text)
    opening = [p for p in found if p.section == found[0].section and not p.is_list][:max_sentences] if found else []
    return " ".join(f"{sentence} [{source.id}]" for p in opening for sentence in split_sentences(p.text))


def source_sentences(body: str) -> list[str]:
    return [p.text for p in passages(body)]


def _embedded(passage: Passage) -> str:
    """What a passage is scored by: a joined list by its lead-in, as the items would dilute its
    meaning (each item is scored too, see `pick_sentences`)."""
    return passage.lead_in if passage.is_list else passage.text


# From this many content words, a question that names a medicine says enough besides the name to be
# read on the rest alone ("he's on clozapine and has a fever and a sore throat"); a shorter one
# ("side effects of clozapine?") is read with and without it, averaged.
ASPECT_ONLY_FROM = 4


def _aspect_vectors(questions: Sequence[str], texts: list[str], vectors: np.ndarray, embed: Embed
                    ) -> tuple[list[np.ndarray | None], np.ndarray]:
    """Each question part that names a medicine, embedded without the name, and the pool's texts
    likewise (None for a part that names none). A medicine's name says which topic, not which
    aspect of it, and MiniLM weighs it so much that "a fever and a sore throat on clozapine" is
    nearest "Your clozapine team is there to help"; read without it, nearest the signs of infection."""
    naming = [names_a_medicine(q) for q in questions]
    if not any(naming):
        return [None] * len(questions), vectors
    changed = [n for n, text in enumerate(texts) if names_a_medicine(text)]
    masked = embed([without_medicines(q) for q, names in zip(questions, naming, strict=True) if names]
                   + [without_medicines(texts[n]) for n in changed])
    asked = iter(masked[: sum(naming)])
    pool = vectors.copy()
    pool[changed] = masked[sum(naming):]
    return [next(asked) if names else None for names in naming], pool


def embedded_texts(source: SourceText) -> list[str]:
    """Every text the generator embeds for a source, for warming the embedding cache: its
    passages, list items and headings, and the questions it links to sentences (see `_asked_of`)."""
    found = passages(source.text)
    return [*(text for p in found for text in (_embedded(p), *p.introduced_items)),
            *dict.fromkeys(p.section for p in found if p.section),
            *source.answers, *(without_medicines(q) for q in source.answers)]


def _content_words(text: str) -> set[str]:
    return set(_WORDS.findall(text.lower())) - STOPWORDS


def _lexical(question_words: set[str], sentence_words: set[str], idf: dict[str, float]) -> float:
    """The share of the question's words the sentence uses, each weighted by how rare it is among
    the sentences on offer: "aripiprazole" or "tardive" says what the question is about, "medicine"
    does not."""
    total = sum(idf.get(w, 0.0) for w in question_words)
    return sum(idf.get(w, 0.0) for w in question_words & sentence_words) / total if total else 0.0


@lru_cache(maxsize=256)
def _quotable(body: str) -> tuple[tuple[Passage, frozenset[str]], ...]:
    """A source's passages that may be quoted, with their content words: read once per source
    text, as the same sources come back turn after turn. A sentence a judge check flags (an
    instruction, a medicine change) is never quoted."""
    return tuple((p, frozenset(_content_words(p.text))) for p in passages(body) if flag_for(p.text) is None)


def _says_again(vectors: np.ndarray, text: str, embed: Embed) -> np.ndarray:
    """Which pooled sentences one of `text`'s sentences says again, maybe in other words."""
    sentences = [strip_citations(s) for s in split_sentences(text)]
    if not sentences or not len(vectors):
        return np.zeros(len(vectors), dtype=bool)
    return np.max(vectors @ embed(sentences).T, axis=1) > SAME_MEANING


def _asked_of(sources: Sequence[SourceText], pool: list[tuple[int, str, Passage]], embed: Embed
              ) -> list[tuple[np.ndarray, np.ndarray] | None]:
    """For each pooled passage, the questions its source's front matter says it answers, embedded
    as said and without medicine names (None for a passage that answers none): "What is
    clozapine?" is near any message naming clozapine, as `_aspect_vectors` says of sentences."""
    links = [(doc.id, question, plain(sentence).lower()) for doc in sources
             for question, sentences in doc.answers.items() for sentence in sentences]
    if not links:
        return [None] * len(pool)
    asked: list[list[str]] = [[] for _ in pool]
    for i, (_, sid, p) in enumerate(pool):
        text = plain(p.text).lower()
        asked[i] = list(dict.fromkeys(q for owner, q, sentence in links
                                      if owner == sid and sentence.rstrip(".!?") in text))
    questions = list(dict.fromkeys(q for found in asked for q in found))
    if not questions:
        return [None] * len(pool)
    vectors, masked = embed(questions), embed([without_medicines(q) for q in questions])
    rows = [[questions.index(q) for q in found] for found in asked]
    return [(vectors[row], masked[row]) if row else None for row in rows]


def _likeness(linked: tuple[np.ndarray, np.ndarray], part: np.ndarray, masked_part: np.ndarray | None,
              words: int) -> float:
    """How like the asked part the nearest linked question is, read as `pick_sentences` reads a
    sentence: without medicine names when the part names one (see `ASPECT_ONLY_FROM`)."""
    vectors, masked = linked
    said = float(np.max(vectors @ part))
    if masked_part is None:
        return said
    aspect = float(np.max(masked @ masked_part))
    return aspect if words >= ASPECT_ONLY_FROM else (said + aspect) / 2


def pick_sentences(
    questions: Sequence[str], sources: Sequence[SourceText], embed: Embed,
    max_sentences: int = 5, per_source: int = 4, already_said: Sequence[str] = (),
    said_before: Sequence[str] = (), focus: str = "", quoted: str = "", meant_medicines: frozenset[str] = frozenset(),
) -> list[Picked]:
    """The best sentences for the question's parts, best first; every part gets its best sentence
    first. Sources come best first and later ones must earn their place (a small handicap per
    rank); a sentence that says what a chosen one already says is passed over; a sentence that
    leans on the one before it ("They can…") brings that one along. Sentences found in
    `already_said` (what "tell me more" has heard) is left for something new; those in
    `said_before` (earlier answers, for a follow-up that asks something of its own) count as any
    other, as its answer may be what the last answer said ("does it need blood tests?" after the
    clozapine card), but the instruction that goes with the lead is not added again. Either counts
    a sentence said in other words (a card's version of it). `focus`: the answer a message
    refers back to ("can it be permanent?" after NMS). The sections it drew on are what "it" is
    about: their sentences count for a little more, and a sentence of another section that leans
    back ("It can be long-lasting", said of tardive dyskinesia) is not quoted, as its "it" would
    read as the asker's. `quoted`: text the answer already holds (an urgent card's lead, cited):
    its sentences are not quoted again, nor what its own sources say like them, while another
    source may say something like them ("Tell your team straight away about signs of infection,
    such as fever…" after "Get help straight away if someone has a high fever…": the lead is
    general, the source specific). `meant_medicines`: the medicines a follow-up's "it" stands for
    ("does it need blood tests?" after clozapine): a part naming none is read as naming them, for
    the bonus only; its words stay its own, so "take it through customs" is still about customs."""
    said = " ".join(already_said)
    offered = [(rank, doc.id, p, found, p.section or doc.title) for rank, doc in enumerate(sources)
               for p, found in _quotable(doc.text) if p.text not in said and p.text not in quoted]
    pool = [(rank, sid, p) for rank, sid, p, _, _ in offered]
    sentence_words = [found for _, _, _, found, _ in offered]
    if not pool:
        return []
    vectors = embed([_embedded(p) for _, _, p in pool])
    # What each sentence's section is about, by its heading (the source's title before the first):
    # "It is not your fault" says what "Nothing you did, said or thought caused it" answers.
    headings = [heading for *_, heading in offered]
    heading_texts = list(dict.fromkeys(headings))
    heading_vectors = embed(heading_texts)[[heading_texts.index(h) for h in headings]]
    focused = {(doc.id, p.section) for doc in sources for p, _ in _quotable(doc.text) if p.text in focus} \
        | {(sid, p.section) for (_, sid, p), near in zip(pool, _says_again(vectors, focus, embed), strict=True)
           if near} if focus else set()
    answers_asked = _asked_of(sources, pool, embed)
    fresh = ~_says_again(vectors, said, embed)
    if quoted:  # what its own sources say like it is not new either, a list with such an item too
        drawn_from = set(citations_in(quoted))
        said_so = _says_again(vectors, quoted, embed)
        for i, (_, sid, p) in enumerate(pool):
            if sid in drawn_from and (said_so[i] or (p.items and _says_again(embed(p.introduced_items), quoted,
                                                                               embed).any())):
                fresh[i] = False
    pool, vectors, heading_vectors = ([item for item, keep in zip(pool, fresh, strict=True) if keep],
                                      vectors[fresh], heading_vectors[fresh])
    answers_asked = [a for a, keep in zip(answers_asked, fresh, strict=True) if keep]
    sentence_words = [found for found, keep in zip(sentence_words, fresh, strict=True) if keep]
    if not pool:
        return []
    df: dict[str, int] = {}
    for found in sentence_words:
        for w in found:
            df[w] = df.get(w, 0) + 1
    # Smoothed inverse document frequency over the pool; a word no sentence uses weighs as the rarest.
    part_words = [_content_words(part) for part in questions]
    idf = {w: float(np.log((len(pool) + 1) / (df.get(w, 0) + 1))) for w in set().union(*part_words)}
    part_vectors = embed(list(questions))
    masked_parts, masked_pool = _aspect_vectors(questions, [_embedded(p) for _, _, p in pool], vectors, embed)
    kinds = [wanted(part) for part in questions]
    in_focus = np.array([(sid, p.section) in focused for _, sid, p in pool])
    leaning = np.array([p.leans_back for _, _, p in pool])
    penalty = 0.06 * np.array([rank for rank, _, _ in pool]) + LEANING_PENALTY * leaning - FOCUS_BONUS * in_focus
    # Unquotable here: leaning back into another section's subject (see `focus`).
    penalty[leaning & ~in_focus & in_focus.any()] = np.inf
    # A list is also as close as its closest item, with its lead-in ("does it make you sleepy?"
    # is answered by "Common side effects: …; drowsiness: feeling sleepy…; …").
    lists = [i for i, (_, _, p) in enumerate(pool) if p.is_list and p.items]
    item_texts = [item for i in lists for item in pool[i][2].introduced_items]
    item_vectors = embed(item_texts) if item_texts else None
    item_owners = np.repeat(lists, [len(pool[i][2].items) for i in lists]).astype(int)
    pool_medicines = [medicines_named(p.text) for _, _, p in pool]
    scored_parts, item_similarity, own_words_parts = [], [], []
    for part, words, part_vector, masked_part, kind in zip(questions, part_words, part_vectors, masked_parts, kinds,
                                                           strict=True):
        similarity = vectors @ part_vector
        if masked_part is not None:
            aspect = masked_pool @ masked_part
            similarity = aspect if len(words) >= ASPECT_ONLY_FROM else (similarity + aspect) / 2
        if item_vectors is not None:
            item_similarity.append(item_vectors @ part_vector)
            np.maximum.at(similarity, item_owners, item_similarity[-1])
        # A sentence linked to a question like this one is as close as that question, less a margin.
        linked = similarity
        if any(a is not None for a in answers_asked):
            asked = np.array([_likeness(a, part_vector, masked_part, len(words)) if a is not None else -1.0
                              for a in answers_asked])
            linked = np.maximum(similarity, asked - QUESTION_MARGIN)
        lexical = np.array([_lexical(words, found, idf) for found in sentence_words])
        # A sentence that gives the kind of answer asked for (a definition for "what is…?", a
        # length of time for "how long…?") is worth more than one that is only on the topic.
        typed = np.array([kind is not None and gives(kind, p.text) for _, _, p in pool], dtype=float)
        # A sentence naming the medicine asked about is about it ("is quetiapine an antipsychotic?"
        # and the list of second-generation ones), which reading without names (above) forgets.
        named = medicines_named(part) or meant_medicines
        naming = np.array([bool(named & names) for names in pool_medicines], dtype=float)
        rest = HEADING_WEIGHT * (heading_vectors @ part_vector) + 0.3 * lexical + ANSWER_TYPE_BONUS * typed - penalty
        scored_parts.append(linked + rest + NAMED_MEDICINE_BONUS * naming)
        own_words_parts.append(similarity + rest)
    combined = np.max(np.vstack(scored_parts), axis=0)
    # Far below the best answer: not worth quoting. Judged on the sentences' own words: a link or a
    # medicine's name orders what is quoted, and the answer-type bonus too; they do not cut.
    floor = float(np.max(own_words_parts)) - 0.25 - ANSWER_TYPE_BONUS * any(kinds)
    index_of = {(sid, p.position): i for i, (_, sid, p) in enumerate(pool)}
    chosen: dict[tuple[str, int], Picked] = {}
    counts: dict[str, int] = {}

    def items_asked(index: int) -> str:
        """A list chosen for a few of its items, not for what its lead-in says, by a question that
        asks whether one thing is so ("does it make you sleepy?" and the side-effects list), is
        quoted with those items only: the rest of a long list buries the answer. A question that
        asks for a set ("what can I do?") gets the whole list, and so does a short list or a list of
        conditions ("Get help straight away if someone: …"), each of which matters."""
        passage = pool[index][2]
        if len(passage.items) < MIN_ITEMS_TO_TRIM or not item_similarity or _CONDITION.search(passage.head):
            return passage.text
        part = int(np.argmax([scores[index] for scores in scored_parts]))
        if not asks_yes_or_no(questions[part]):
            return passage.text
        own = item_similarity[part][item_owners == index]
        best = float(own.max())
        if best < float(vectors[index] @ part_vectors[part]) + ITEM_OVER_LEAD_IN:
            return passage.text
        keep = [int(i) for i in np.argsort(-own)[:MAX_ITEMS_ASKED] if own[i] >= best - ITEM_BAND]
        return passage.with_items(keep) if len(keep) < len(own) else passage.text

    def take(index: int, *, forced: bool = False) -> None:
        _, source_id, passage = pool[index]
        key = (source_id, passage.position)
        if key in chosen or (not forced and counts.get(source_id, 0) >= per_source):
            return
        if not forced and any(float(vectors[index] @ vectors[index_of[k]]) > SAME_MEANING for k in chosen):
            return  # says again what a chosen sentence says
        if passage.leans_back and (before := index_of.get((source_id, passage.position - 1))) is not None \
                and pool[before][2].section == passage.section:
            take(before, forced=True)  # its antecedent first
        counts[source_id] = counts.get(source_id, 0) + 1
        # A list brought along by the sentence it continues is quoted whole: it says what that one is.
        text = passage.text if forced else items_asked(index)
        chosen[key] = Picked(source_id, passage.position, text, float(combined[index]), passage.leans_back,
                             bool(passage.items))
        # A sentence that the next passage's list goes on from says little without it ("Some things
        # make relapse more likely." before "Common triggers are: …").
        following = index_of.get((source_id, passage.position + 1))
        if not passage.is_list and following is not None and pool[following][2].is_list \
                and pool[following][2].section == passage.section and len(chosen) < max_sentences:
            take(following, forced=True)

    for scores in scored_parts:  # one sentence per part first, so no part goes unanswered
        take(int(np.argmax(scores)))
    # The best sentence's own continuation ("Tardive dyskinesia is… It causes movements…", "NMS
    # is a rare but serious reaction. Signs of NMS include: fever; …") goes with it, before the rest is
    # filled in: it says more about what answered, and reads well only right after it ("… most
    # people who have a relative with it never develop it. As a rough guide: …; if a brother or
    # sister has it, the chance is around 1 in 10"). Up to two passages: a sentence that leans
    # back and the list it introduces ("It helps… Its key features are: …").
    lead = max(chosen.values(), key=lambda p: p.score)
    section = pool[index_of[(lead.source_id, lead.position)]][2].section
    for step in (1, 2):
        after = index_of.get((lead.source_id, lead.position + step))
        if after is None or len(chosen) >= max_sentences:
            break
        passage = pool[after][2]
        if passage.section != section or not (passage.leans_back or passage.is_list):
            break
        take(after, forced=True)
    # Then the best of the rest. A sentence that leans on one already chosen reads well right after
    # it ("If you have stopped…, contact your prescriber the same day. Ask them how to start
    # again…"), so there its leaning costs nothing.
    antecedent = np.array([before if leaning[i] and (before := index_of.get((sid, p.position - 1), -1)) >= 0
                           and pool[before][2].section == p.section else -1 for i, (_, sid, p) in enumerate(pool)])
    tried: set[int] = set()
    while len(chosen) < max_sentences:
        taken = np.zeros(len(pool) + 1, dtype=bool)  # the last slot stands for "no antecedent"
        taken[[index_of[key] for key in chosen]] = True
        score = combined + LEANING_PENALTY * taken[antecedent]
        score[list(tried)] = -np.inf
        index = int(np.argmax(score))
        if score[index] < floor:
            break
        tried.add(index)
        take(index)
    # What to do about what the lead describes goes with it too, if there is room: its section's
    # first instruction after it ("Tell your team if you notice any new movements" after tardive
    # dyskinesia, "If these happen, get urgent medical help" after the signs of NMS), unless an
    # earlier answer said it.
    step = next((i for i, (_, sid, p) in enumerate(pool) if sid == lead.source_id and p.section == section
                 and p.position > lead.position and _INSTRUCTION.match(p.text)), None)
    said_earlier = " ".join(said_before)
    if step is not None and (pool[step][2].text in said_earlier or _says_again(vectors[[step]], said_earlier, embed)[0]):
        step = None
    if step is not None and len(chosen) < max_sentences:
        take(step, forced=True)
    return list(chosen.values())


def compose_extractive_answer(
    questions: Sequence[str], sources: Sequence[SourceText], embed: Embed, max_sentences: int = 5,
    already_said: Sequence[str] = (), said_before: Sequence[str] = (), focus: str = "", quoted: str = "",
    meant_medicines: frozenset[str] = frozenset(),
) -> str:
    """The sentence that answers best leads (after its antecedent, if it leans on one), then the
    rest of its source, then the other sources in the order given; within a source, sentences
    keep their own order."""
    picked = pick_sentences(questions, sources, embed, max_sentences=max_sentences,
                            already_said=already_said, said_before=said_before, focus=focus, quoted=quoted,
                            meant_medicines=meant_medicines)
    if not picked:
        return reply("verification_reminder")
    best = max(picked, key=lambda p: p.score)
    # What the lead leans on goes before it, back to the sentence that names what "it" is
    # ("Tardive dyskinesia is… It causes… It can be long-lasting…").
    at = {p.position: p for p in picked if p.source_id == best.source_id}
    ahead: list[Picked] = []
    leaning = best
    while leaning.leans_back and (leaning := at.get(leaning.position - 1)):
        ahead.insert(0, leaning)
    # What leans on the lead goes right after it, whatever else of its source comes between
    # ("CBD is another chemical in cannabis. It does not make people high…": not "It" after a list
    # on cannabis).
    after: list[Picked] = []
    while (leaning := at.get((after[-1] if after else best).position + 1)) and leaning.leans_back:
        after.append(leaning)
    order = [best.source_id, *(doc.id for doc in sources if doc.id != best.source_id)]
    paragraphs: list[str] = []
    for source_id in order:
        group = sorted((p for p in picked if p.source_id == source_id), key=lambda p: p.position)
        if source_id == best.source_id:
            group = [*ahead, best, *after, *(p for p in group if p is not best and p not in ahead and p not in after)]
        if group:
            # Every sentence cited, those of a passage of several (a myth and its correction) too.
            paragraphs.append(" ".join(f"{sentence} [{p.source_id}]" for p in group
                                       for sentence in ([p.text] if p.listed else split_sentences(p.text))))
    return "\n\n".join([*paragraphs, reply("verification_reminder")])
