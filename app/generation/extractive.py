"""The grounded extractive generator: an answer made only of the sources' own sentences.

It is the answer when no chat model is configured, and the CAF's safe fallback when a draft cannot
be made to pass. Every sentence is copied from a source and cited, so it cannot invent anything;
its weakness is fluency, not faithfulness.
"""

from __future__ import annotations

import re
from collections.abc import Sequence
from dataclasses import dataclass

import numpy as np

from app.core.answer_types import asks_yes_or_no, gives, wanted
from app.core.medicines import class_words, medicines_named
from app.core.records import SourceText
from app.core.text import split_sentences
from app.generation.likeness import (
    ASPECT_ONLY_FROM,
    SAME_MEANING,
    Embed,
    aspect_vectors,
    content_words,
    embedded,
    lexical,
    likeness,
    says_again,
)
from app.generation.passages import Passage, passages
from app.generation.pool import Pool, sentences_on_offer
from app.prompts import reply

# -- what a sentence scores for a question part, over its likeness (a cosine similarity) ----------
LEXICAL_WEIGHT = 0.3  # times the idf-weighted share of the part's words it uses: rare words say what is asked
HEADING_WEIGHT = 0.2  # times the likeness of a sentence's section heading to the question (dev sets: flat 0-0.3)
ANSWER_TYPE_BONUS = 0.1  # it gives the kind of answer asked for ("what is…?": a definition), not only the topic
NAMED_MEDICINE_BONUS = 0.1  # a sentence naming the medicine the question names (dev sets: flat 0.1-0.2)
# A sentence the knowledge base links to a question like the one asked scores as that question's
# likeness, less this much: the link says it answers such a question, the likeness how alike.
QUESTION_MARGIN = 0.15
SOURCE_RANK_HANDICAP = 0.06  # per rank of its source: sources come best first, later ones earn their place
LEANING_PENALTY = 0.15  # a sentence that leans on the one before it needs that one too
FOCUS_BONUS = 0.1  # a sentence of a section the last answer drew on, for a message that refers back to it
# Below the best part's score on the sentences' own words by more than this: not worth quoting.
FLOOR_BELOW_BEST = 0.25
# -- what goes with what is chosen ----------------------------------------------------------------
LEAD_CONTINUATION = 2  # passages after the lead quoted with it: one leaning back, and the list it introduces
# A list of at least MIN_ITEMS_TO_TRIM items whose closest item is ITEM_OVER_LEAD_IN closer to a
# yes-or-no question than its lead-in is quoted with its closest items only: up to
# MAX_ITEMS_ASKED, each within ITEM_BAND of the closest.
MIN_ITEMS_TO_TRIM = 5
ITEM_OVER_LEAD_IN = 0.1
ITEM_BAND = 0.08
MAX_ITEMS_ASKED = 3
# An instruction: an imperative, maybe after the condition it applies to ("If these happen, get …")
# or a word that links or stresses it ("So always tell your care team before you stop…").
_INSTRUCTION = re.compile(r"^(?:if [^,]+,\s*)?(?:(?:so|also|then|always|please)\s+)*"
                          r"(?:tell|ask|contact|call|get|seek|talk to|speak to|let|see|go to)\b", re.IGNORECASE)
_CONDITION = re.compile(r"\b(if|when|unless)\b", re.IGNORECASE)  # a list of conditions is quoted whole


@dataclass(frozen=True)
class Picked:
    """A sentence chosen for the answer, with its best score for any part of the question."""

    source_id: str
    position: int
    text: str
    score: float
    leans_back: bool = False  # quoted after the passage before it
    listed: bool = False  # a joined list: one sentence, cited once ("What helps? Routines; …")


def overview(source: SourceText, max_sentences: int = 3) -> str:
    """What the source's topic is, cited: the opening paragraph, before its first heading. For a
    message that asks nothing ("my brother started clozapine 2 weeks ago"): any other sentence,
    chosen by likeness to the message, would answer a question nobody asked ("Contact your
    clozapine team before taking any more", from the section on missed doses)."""
    found = passages(source.text)
    opening = [p for p in found if p.section == found[0].section and not p.is_list][:max_sentences] if found else []
    return " ".join(f"{sentence} [{source.id}]" for p in opening for sentence in split_sentences(p.text))


# -- scoring ------------------------------------------------------------------------------------
@dataclass(frozen=True)
class _Scores:
    """The pool scored against each part of the question."""

    part_vectors: np.ndarray
    by_part: list[np.ndarray]  # each part's score of every pooled sentence
    item_similarity: list[np.ndarray]  # each part's likeness to every joined list's items (none: no lists)
    item_owners: np.ndarray  # the pooled list each of those items belongs to
    combined: np.ndarray  # a sentence's best score for any part
    floor: float  # the least a sentence may score and still be quoted
    leaning: np.ndarray  # which sentences lean on the one before them


def _idf(questions: Sequence[str], pool: Pool) -> tuple[list[set[str]], dict[str, float]]:
    """Each part's content words, and how rare each is among the pooled sentences: a smoothed
    inverse document frequency, where a word no sentence uses weighs as the rarest."""
    df: dict[str, int] = {}
    for found in pool.words:
        for w in found:
            df[w] = df.get(w, 0) + 1
    part_words = [content_words(part) for part in questions]
    idf = {w: float(np.log((len(pool.entries) + 1) / (df.get(w, 0) + 1))) for w in set().union(*part_words)}
    return part_words, idf


def _penalty(pool: Pool) -> tuple[np.ndarray, np.ndarray]:
    """What each sentence loses whatever is asked (its source's rank, leaning back; less for the
    section referred back to), and which sentences lean back."""
    in_focus = np.array([(sid, p.section) in pool.focused for _, sid, p in pool.entries])
    leaning = np.array([p.leans_back for _, _, p in pool.entries])
    penalty = SOURCE_RANK_HANDICAP * np.array([rank for rank, _, _ in pool.entries]) + LEANING_PENALTY * leaning \
        - FOCUS_BONUS * in_focus
    # Unquotable here: leaning back into another section's subject (see `focus`).
    penalty[leaning & ~in_focus & in_focus.any()] = np.inf
    return penalty, leaning


def _list_items(pool: Pool, embed: Embed) -> tuple[np.ndarray | None, np.ndarray]:
    """Every joined list's items, each introduced by its lead-in, embedded, with the list each
    belongs to. A list is also as close as its closest item ("does it make you sleepy?" is
    answered by "Common side effects: …; drowsiness: feeling sleepy…; …")."""
    lists = [i for i, (_, _, p) in enumerate(pool.entries) if p.is_list and p.items]
    item_texts = [item for i in lists for item in pool.entries[i][2].introduced_items]
    item_vectors = embed(item_texts) if item_texts else None
    item_owners = np.repeat(lists, [len(pool.entries[i][2].items) for i in lists]).astype(int)
    return item_vectors, item_owners


def _score(questions: Sequence[str], pool: Pool, embed: Embed, meant_medicines: frozenset[str]) -> _Scores:
    """Every pooled sentence's score for each part of the question: its likeness (or a linked
    question's), plus the weighted heading, rare words, answer type and medicine named, less its
    penalty; and the floor below which none is quoted."""
    part_words, idf = _idf(questions, pool)
    vectors, entries = pool.vectors, pool.entries
    part_vectors = embed(list(questions))
    masked_parts, masked_pool = aspect_vectors(questions, [embedded(p) for _, _, p in entries], vectors, embed)
    kinds = [wanted(part) for part in questions]
    penalty, leaning = _penalty(pool)
    item_vectors, item_owners = _list_items(pool, embed)
    pool_medicines = [medicines_named(p.text) for _, _, p in entries]
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
        if any(a is not None for a in pool.answers_asked):
            asked = np.array([likeness(a, part_vector, masked_part, len(words)) if a is not None else -1.0
                              for a in pool.answers_asked])
            linked = np.maximum(similarity, asked - QUESTION_MARGIN)
        word_share = np.array([lexical(words, found, idf) for found in pool.words])
        # A sentence that gives the kind of answer asked for (a definition for "what is…?", a
        # length of time for "how long…?") is worth more than one that is only on the topic.
        typed = np.array([kind is not None and gives(kind, p.text) for _, _, p in entries], dtype=float)
        # A sentence naming the medicine asked about is about it ("is quetiapine an antipsychotic?"
        # and the list of second-generation ones), which reading without names (above) forgets.
        own = medicines_named(part)
        named = own or meant_medicines
        # For a medicine meant but not named ("is it safe to drink on it?" after clozapine), so is
        # one on its class naming no other ("Drinking while taking antipsychotic medicine…"); a
        # question naming it is nearer the sentences that name it than those on its class.
        of_class = None if own else class_words(meant_medicines)
        naming = np.array([bool(named & names or (of_class and not names and of_class.search(p.text)))
                           for names, (_, _, p) in zip(pool_medicines, entries, strict=True)], dtype=float)
        rest = HEADING_WEIGHT * (pool.heading_vectors @ part_vector) + LEXICAL_WEIGHT * word_share \
            + ANSWER_TYPE_BONUS * typed - penalty
        scored_parts.append(linked + rest + NAMED_MEDICINE_BONUS * naming)
        own_words_parts.append(similarity + rest)
    # Far below the best answer: not worth quoting. Judged on the sentences' own words: a link or a
    # medicine's name orders what is quoted, and the answer-type bonus too; they do not cut.
    floor = float(np.max(own_words_parts)) - FLOOR_BELOW_BEST - ANSWER_TYPE_BONUS * any(kinds)
    return _Scores(part_vectors, scored_parts, item_similarity, item_owners,
                   np.max(np.vstack(scored_parts), axis=0), floor, leaning)


# -- choosing -----------------------------------------------------------------------------------
class _Choice:
    """The sentences chosen so far, in the order chosen, and the rules for taking one more."""

    def __init__(self, questions: Sequence[str], pool: Pool, scores: _Scores, max_sentences: int,
                 per_source: int) -> None:
        self.questions, self.pool, self.scores = questions, pool, scores
        self.max_sentences, self.per_source = max_sentences, per_source
        self.index_of = {(sid, p.position): i for i, (_, sid, p) in enumerate(pool.entries)}
        self.chosen: dict[tuple[str, int], Picked] = {}
        self.counts: dict[str, int] = {}

    def passage(self, index: int) -> Passage:
        return self.pool.entries[index][2]

    @property
    def full(self) -> bool:
        return len(self.chosen) >= self.max_sentences

    def take(self, index: int, *, forced: bool = False) -> None:
        """Choose a pooled sentence, unless its source has had its share or a chosen one says the
        same (`forced`: it goes with one chosen, so neither applies)."""
        _, source_id, passage = self.pool.entries[index]
        vectors, index_of = self.pool.vectors, self.index_of
        key = (source_id, passage.position)
        if key in self.chosen or (not forced and self.counts.get(source_id, 0) >= self.per_source):
            return
        if not forced and any(float(vectors[index] @ vectors[index_of[k]]) > SAME_MEANING for k in self.chosen):
            return  # says again what a chosen sentence says
        if passage.leans_back and (before := index_of.get((source_id, passage.position - 1))) is not None \
                and self.passage(before).section == passage.section:
            self.take(before, forced=True)  # its antecedent first
        self.counts[source_id] = self.counts.get(source_id, 0) + 1
        # A list brought along by the sentence it continues is quoted whole: it says what that one is.
        text = passage.text if forced else self._items_asked(index)
        self.chosen[key] = Picked(source_id, passage.position, text, float(self.scores.combined[index]),
                                  passage.leans_back, bool(passage.items))
        # A sentence that the next passage's list goes on from says little without it ("Some things
        # make relapse more likely." before "Common triggers are: …").
        following = index_of.get((source_id, passage.position + 1))
        if not passage.is_list and following is not None and self.passage(following).is_list \
                and self.passage(following).section == passage.section and not self.full:
            self.take(following, forced=True)

    def _items_asked(self, index: int) -> str:
        """A list chosen for a few of its items, not for what its lead-in says, by a question that
        asks whether one thing is so ("does it make you sleepy?" and the side-effects list), is
        quoted with those items only: the rest of a long list buries the answer. A question that
        asks for a set ("what can I do?") gets the whole list, and so does a short list or a list of
        conditions ("Get help straight away if someone: …"), each of which matters."""
        passage, scores = self.passage(index), self.scores
        if len(passage.items) < MIN_ITEMS_TO_TRIM or not scores.item_similarity or _CONDITION.search(passage.head):
            return passage.text
        part = int(np.argmax([by_part[index] for by_part in scores.by_part]))
        if not asks_yes_or_no(self.questions[part]):
            return passage.text
        own = scores.item_similarity[part][scores.item_owners == index]
        best = float(own.max())
        if best < float(self.pool.vectors[index] @ scores.part_vectors[part]) + ITEM_OVER_LEAD_IN:
            return passage.text
        keep = [int(i) for i in np.argsort(-own)[:MAX_ITEMS_ASKED] if own[i] >= best - ITEM_BAND]
        return passage.with_items(keep) if len(keep) < len(own) else passage.text


def _answer_each_part(choice: _Choice) -> None:
    """One sentence per part first, so no part goes unanswered."""
    for by_part in choice.scores.by_part:
        choice.take(int(np.argmax(by_part)))


def _continue_lead(choice: _Choice) -> tuple[Picked, str]:
    """The best sentence's own continuation ("Tardive dyskinesia is… It causes movements…", "NMS
    is a rare but serious reaction. Signs of NMS include: fever; …") goes with it, before the rest is
    filled in: it says more about what answered, and reads well only right after it ("… most
    people who have a relative with it never develop it. As a rough guide: …; if a brother or
    sister has it, the chance is around 1 in 10"). Up to two passages: a sentence that leans
    back and the list it introduces ("It helps… Its key features are: …"). Returns the lead and
    its section."""
    lead = max(choice.chosen.values(), key=lambda p: p.score)
    section = choice.passage(choice.index_of[(lead.source_id, lead.position)]).section
    for step in range(1, LEAD_CONTINUATION + 1):
        after = choice.index_of.get((lead.source_id, lead.position + step))
        if after is None or choice.full:
            break
        passage = choice.passage(after)
        if passage.section != section or not (passage.leans_back or passage.is_list):
            break
        choice.take(after, forced=True)
    return lead, section


def _fill_with_the_best(choice: _Choice) -> None:
    """Then the best of the rest, down to the floor. A sentence that leans on one already chosen
    reads well right after it ("If you have stopped…, contact your prescriber the same day. Ask
    them how to start again…"), so there its leaning costs nothing."""
    entries, index_of, scores = choice.pool.entries, choice.index_of, choice.scores
    antecedent = np.array([before if scores.leaning[i] and (before := index_of.get((sid, p.position - 1), -1)) >= 0
                           and entries[before][2].section == p.section else -1
                           for i, (_, sid, p) in enumerate(entries)])
    tried: set[int] = set()
    while not choice.full:
        taken = np.zeros(len(entries) + 1, dtype=bool)  # the last slot stands for "no antecedent"
        taken[[index_of[key] for key in choice.chosen]] = True
        score = scores.combined + LEANING_PENALTY * taken[antecedent]
        score[list(tried)] = -np.inf
        index = int(np.argmax(score))
        if score[index] < scores.floor:
            break
        tried.add(index)
        choice.take(index)


def _add_instruction(choice: _Choice, lead: Picked, section: str, said_before: Sequence[str], embed: Embed) -> None:
    """What to do about what the lead describes goes with it too, if there is room: its section's
    first instruction after it ("Tell your team if you notice any new movements" after tardive
    dyskinesia, "If these happen, get urgent medical help" after the signs of NMS), unless an
    earlier answer said it."""
    entries = choice.pool.entries
    step = next((i for i, (_, sid, p) in enumerate(entries) if sid == lead.source_id and p.section == section
                 and p.position > lead.position and _INSTRUCTION.match(p.text)), None)
    said_earlier = " ".join(said_before)
    if step is not None and (entries[step][2].text in said_earlier
                             or says_again(choice.pool.vectors[[step]], said_earlier, embed)[0]):
        step = None
    if step is not None and not choice.full:
        choice.take(step, forced=True)


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
    pool = sentences_on_offer(sources, embed, said=" ".join(already_said), quoted=quoted, focus=focus)
    if pool is None:
        return []
    choice = _Choice(questions, pool, _score(questions, pool, embed, meant_medicines), max_sentences, per_source)
    _answer_each_part(choice)
    lead, section = _continue_lead(choice)
    _fill_with_the_best(choice)
    _add_instruction(choice, lead, section, said_before, embed)
    return list(choice.chosen.values())


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
