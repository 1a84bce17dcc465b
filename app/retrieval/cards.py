"""Matching a question to a vetted answer card: the nearest of the cards' own phrasings."""

from __future__ import annotations

import dataclasses
from collections.abc import Callable, Collection, Sequence
from dataclasses import dataclass

import numpy as np

from app.core.answer_types import asks_anything, wanted
from app.core.config_sections import Retrieval
from app.core.medicines import mentions_medicine, names_a_medicine, without_medicines
from app.core.text import RELATIONS, content_stems, stem
from app.kb.cards import AnswerCard, safety_facts
from app.retrieval.references import CLAUSE_END, refers_back

Embed = Callable[[list[str]], np.ndarray]

# Words that only say who is ill, with what and since when ("my son was diagnosed with
# schizophrenia last year", the condition's words from the profile): a clause of these alone is the
# asker's situation, not their question.
_SITUATION_TEXT = """
children family illness condition diagnosis diagnosed told found got year years month months week
weeks day days ago last recently since today yesterday now
"""
_SITUATION = frozenset(stem(w) for w in (*RELATIONS, *_SITUATION_TEXT.split()))


def situation_told(question: str, condition_words: Collection[str] = ()) -> tuple[str, str]:
    """(the clauses that only state the situation, the rest): "my son has schizophrenia and won't
    take his meds" tells "my son has schizophrenia" and asks "won't take his meds"; "do I have
    schizophrenia?" asks, in the same words. No situation ("", the message) when setting it aside
    would leave nothing asked of its own ("my son was just diagnosed, what now?") or leave words
    that lean on it ("my brother has it. will I get it?")."""
    situation = _SITUATION | {stem(w) for w in condition_words}
    clauses = [c.strip() for c in CLAUSE_END.split(question) if c.strip()]
    told = [c for c in clauses if (stems := content_stems(c)) and stems <= situation and not asks_anything(c)]
    rest = " ".join(c for c in clauses if c not in told)
    if not told or not content_stems(rest) - situation or refers_back(rest):
        return "", question
    return " ".join(told), rest


# How much closer one card must be than another to win over a second reading that prefers the other.
MUCH_CLOSER = 0.1
# What a medicine's name is read as when only what is asked of it counts (`CardMatcher._similarities`).
SOME_MEDICINE = "this medicine"


@dataclass(frozen=True)
class CardMatch:
    card: AnswerCard
    similarity: float
    phrasing: str  # the card question it matched
    confident: bool  # deliver it; otherwise only a fallback for a rejected LLM draft


class CardMatcher:
    def __init__(self, cards: Sequence[AnswerCard], embed: Embed, condition_words: Collection[str] = ()):
        self.cards = list(cards)
        self.condition_words = tuple(condition_words)  # the profile's (`situation_told`)
        self._embed = embed
        self._owners = [card for card in self.cards for _ in card.questions]
        self._phrasings = [q for card in self.cards for q in card.questions]
        self._defining = np.array([wanted(q) == "definition" for q in self._phrasings], dtype=bool)
        self._naming = np.array([names_a_medicine(q) for q in self._phrasings], dtype=bool)
        self._defining_medicine = np.flatnonzero(self._defining & self._naming)
        self._vectors: np.ndarray | None = None
        self._unnamed: np.ndarray | None = None  # every phrasing with each name read as SOME_MEDICINE
        self.safety_facts = safety_facts(self.cards)  # by kind of request, read once
        declared = {kind for card in self.cards if card.safety_fact for kind in card.requests}
        self._situational = [not owner.safety_fact and bool(declared & set(owner.requests)) for owner in self._owners]
        self.kinds_answered = frozenset(kind for card in self.cards for kind in card.requests)

    def _matrix(self) -> np.ndarray:
        if self._vectors is None:  # on first use: building services stays cheap
            self._vectors = self._embed(self._phrasings)
            self._unnamed = self._vectors.copy()
            if self._naming.any():
                self._unnamed[self._naming] = self._embed([without_medicines(q, SOME_MEDICINE) for q, naming
                                                           in zip(self._phrasings, self._naming, strict=True) if naming])
        return self._vectors

    def match(self, question: str, settings: Retrieval, *, own_case: bool = False,
              requests: Sequence[str] = (), found: Sequence[str] = (), topics: Collection[str] = (),
              subjects: Collection[str] | None = None, continued: Collection[str] = (),
              medicine: bool | None = None) -> CardMatch | None:
        """The card for what the message asks, read without the clauses that only state the
        situation (`situation_told`) when that finds a card confidently: the situation's words
        sway a whole message's embedding towards the cards about that situation ("my son has
        schizophrenia and won't take his meds" is near "my son has just been diagnosed with
        schizophrenia"). Else the card for the whole message (see `_match`), unless it is the card
        the situation alone would get. `medicine`: whether the message speaks of a medicine
        (default: whether it names one or says "tablets", "meds"; "can I just stop taking it?"
        after clozapine does, by reference)."""
        options = dict(own_case=own_case, requests=requests, found=found, topics=topics, subjects=subjects,
                       continued=continued,
                       medicine=mentions_medicine(question) if medicine is None else medicine)
        situation, asked = situation_told(question, self.condition_words)
        if not situation:
            return self._match(question, settings, **options)
        found = self._match(asked, settings, **options)
        if found is not None and found.confident:
            return found
        whole = self._match(question, settings, **options)
        if whole is not None and (told := self._match(situation, settings)) is not None and told.card is whole.card:
            return found  # the card for the situation alone ("my husband has schizophrenia and he sleeps all day")
        return whole

    def _match(self, question: str, settings: Retrieval, *, own_case: bool = False,
               requests: Sequence[str] = (), found: Sequence[str] = (), topics: Collection[str] = (),
               subjects: Collection[str] | None = None, continued: Collection[str] = (),
               medicine: bool = False) -> CardMatch | None:
        """The closest card if it is close enough and clearly closer than any other card. For a
        request about the person's own case (`own_case`; `requests`: the screen's reading of its
        kind, and any kind nearly as likely), the boundary card for that kind of request (see
        `_requested`), else the closest boundary card; unless a general card is much closer.
        `found`: the sources retrieval found clearly for the question, best first; a general card
        drawing on the best needs less closeness (`card_agreed_threshold`); `topics`: the sources
        whose keywords the question says; `subjects`: those it names in words other than a
        medicine's name (default: `topics`); `continued`: the sources of the answer a message read
        with the conversation continues (see `_requested`); `medicine`: the message speaks of a
        medicine (see `match`)."""
        similarities = self._similarities(question)
        if similarities is None:
            return None
        if own_case and wanted(question) != "definition":
            # A request asks what to do, not what something is: "should i take more of olanzapine"
            # is near "what sort of drug is olanzapine" for the name alone.
            similarities = np.where(self._defining, -1.0, similarities)
        general = self._closest(similarities, settings)
        if found and (general is None or not general.confident):
            general = self._agreed(similarities, settings, found[0]) or general
        boundary = None
        if own_case:
            # Named in its own words and found by retrieval too: "tablet" names the medicines source.
            named = (set(topics) if subjects is None else set(subjects) & set(topics)) & set(found)
            boundary = (self._requested(question, similarities, requests, settings, topics,
                                        [named, {*found, *continued}], medicine)
                        or self._closest(similarities, settings, boundary_only=True))
        # A much closer general card answers, its topic framed as a boundary reply, when it is
        # close enough to deliver, or the message names its topic in so many words (`topics`) and
        # none of the boundary card's, if any: "I'm on clozapine, should I quit smoking?" is the
        # smoking card's, not the one on drink and cannabis its kind of request chose, and "my mate
        # says I should switch to vaping" is the smoking card's though no boundary card is near;
        # "my mum wants to come off clozapine because of the blood tests" still hears why not to
        # stop alone, and "my brother has schizophrenia, will I get it?" is no closer to the card
        # for a new diagnosis than its words about the situation make it.
        named = set(topics)
        if own_case and named and (boundary is None or not set(boundary.card.sources) & named):
            # The closest card on a named topic need only be as close as a boundary card must be:
            # the topic's words already say what the request is about, and its kind's card is not.
            # Not a topic named only by a medicine's name, which sways the embedding to the cards
            # that name it ("my hands shake on risperidone, should I stop it?" is near "what is
            # risperidone?") and says which medicine, not what of it is asked.
            subject = named if subjects is None else set(subjects) & named
            topical = self._closest(similarities, settings, on_sources=subject) if subject else None
            if topical is not None and topical.confident and (
                    boundary is None or topical.similarity > boundary.similarity + MUCH_CLOSER):
                return topical
        if boundary is None:
            if own_case and general is not None and general.similarity < settings.card_threshold:
                # Retrieval's agreement (`_agreed`) says the card is on the topic, not that it
                # answers a request ("tell me what dose of quetiapine to take" is near the card on
                # what quetiapine is): only a fallback then.
                return dataclasses.replace(general, confident=False)
            return general
        # Only on its own closeness: retrieval's agreement (`_agreed`) says the card is on the
        # message's topic, not that it answers a request ("would I be better off on aripiprazole?"
        # is near the card on what aripiprazole is for the name alone).
        if general is not None and general.similarity >= settings.card_threshold \
                and general.similarity > boundary.similarity + MUCH_CLOSER:
            return general
        return boundary

    def nearest_boundary(self, question: str, settings: Retrieval) -> CardMatch | None:
        """The nearest boundary card above `boundary_card_floor`, however close the others: for a
        request about the person's own case that nothing else answers (`match` found no card, not
        even one for its kind of request). Any boundary card is a safe reply to such a request;
        the nearest carries the most relevant safety fact."""
        similarities = self._similarities(question)
        if similarities is None:
            return None
        best = self._nearest_boundary(similarities)
        if best is None or similarities[best] < settings.boundary_card_floor:
            return None
        return CardMatch(self._owners[best], float(similarities[best]), self._phrasings[best], confident=True)

    def _agreed(self, similarities: np.ndarray, settings: Retrieval, best_source: str) -> CardMatch | None:
        """The closest general card, if it draws on `best_source`, is at least
        `card_agreed_threshold` close, and is clearly closer than any other card that draws on it
        (a card about other sources that is as close is outvoted by retrieval)."""
        best: dict[str, tuple[float, int]] = {}
        for index, similarity in enumerate(similarities):
            owner = self._owners[index]
            if owner.kind == "answer" and best_source in owner.sources \
                    and similarity > best.get(owner.id, (-1.0, 0))[0]:
                best[owner.id] = (float(similarity), index)
        ranking = sorted(best.values(), reverse=True)
        if not ranking or ranking[0][0] < settings.card_agreed_threshold:
            return None
        similarity, index = ranking[0]
        if len(ranking) > 1 and similarity - ranking[1][0] < settings.card_margin:
            return None
        return CardMatch(self._owners[index], similarity, self._phrasings[index], confident=True)

    def _requested(self, question: str, similarities: np.ndarray, requests: Sequence[str],
                   settings: Retrieval, topics: Collection[str] = (),
                   vouching: Sequence[Collection[str]] = (), medicine: bool = False) -> CardMatch | None:
        """The closest of the boundary cards that answer these kinds of request (the likeliest kind,
        and any kind nearly as likely: the card's phrasings then decide). The screen's reading
        of the request, learned from hundreds of them, says what is asked better than the nearest
        of a few phrasings, which the topic's words sway ("mum has schizophrenia … she spat her
        tablet out" is near "my mum has schizophrenia, will I get it?"). Not when the question says
        all of another card's own phrasing almost word for word (`card_threshold`, and every
        content word of the phrasing: "should I stop my meds?" is close to, but says less than,
        "should I stop my meds because of the side effects?"), nor for a kind no card lists.
        The kind is read from words like "stop", which the topic may not be about: when the
        question speaks of no medicine and names the topic of the nearest boundary card
        (`topics`, by keyword) but not that of the kind's card, the nearest answers ("should we
        stop him smoking weed?" is about cannabis, not stopping medicine), and when no boundary card
        is about what it names, none is (the reply is composed from what retrieval found). Of
        several cards for the kind, one drawing on a source that vouches for it comes first unless
        another is much closer: the phrasings may not know the words ("St John's wort"),
        retrieval's examples may. `vouching`: groups of such sources, the first that vouches for
        any of the cards deciding: the sources the message names in its own words that retrieval found,
        then all those retrieval found or that the answer a follow-up continues drew on ("does that
        mean she'll get it?" after heredity); "is it safe with alcohol?" after olanzapine names
        drink, which the card on other medicines does not speak to, though the medicines source
        vouches for it."""
        serving = [i for i, owner in enumerate(self._owners) if set(requests) & set(owner.requests)]
        if not serving:
            return None
        # The kind's cards differ in the situation, not the medicine: "my dad took his clozapine
        # twice by mistake" is nearer "I haven't taken my clozapine for a few days" than "my mum
        # took her evening medicine twice by mistake" for the name alone.
        unnamed = self._unnamed_similarities(question)
        closeness = similarities if unnamed is None else unnamed

        def closest(rows: list[int]) -> int:
            """The closest of these, unless it is a card for one situation of a kind whose fact
            another card declares ("an extra dose by mistake", beside the card on missed doses)
            and is not much closer than the closest card that is not: such a card answers only
            what clearly is its situation ("she spat one out, should I give her another?" is not)."""
            best = max(rows, key=lambda i: closeness[i])
            others = [i for i in rows if not self._situational[i]]
            if self._situational[best] and others \
                    and closeness[best] - closeness[(other := max(others, key=lambda i: closeness[i]))] < MUCH_CLOSER:
                return other
            return best

        best = closest(serving)
        for vouched in vouching:
            # A card speaks to its reasons too (a request to switch because of the weight).
            backed = [i for i in serving if set(vouched) & {*self._owners[i].sources, *self._owners[i].reasons}]
            if not backed:
                continue
            agreeing = closest(backed)
            if closeness[best] - closeness[agreeing] < MUCH_CLOSER:
                best = agreeing
            break
        nearest = self._nearest_boundary(similarities)
        if topics and not medicine and not set(self._owners[best].sources) & set(topics):
            if nearest is None or not set(self._owners[nearest].sources) & set(topics):
                return None  # "will the DVLA take my licence?" is about driving, whatever "will … me" reads as
            best = nearest
        verbatim = int(np.argmax(similarities))
        if similarities[verbatim] >= settings.card_threshold and self._owners[verbatim] is not self._owners[best] \
                and content_stems(self._phrasings[verbatim]) <= content_stems(question):
            return None
        if similarities[best] < settings.boundary_card_floor:
            return None
        return CardMatch(self._owners[best], float(similarities[best]), self._phrasings[best], confident=True)

    def _nearest_boundary(self, similarities: np.ndarray) -> int | None:
        """The index of the boundary card phrasing closest to the question (None: no boundary card)."""
        return max((i for i, owner in enumerate(self._owners) if owner.kind == "boundary"),
                   key=lambda i: similarities[i], default=None)

    def _similarities(self, question: str) -> np.ndarray | None:
        """The question's cosine to every card phrasing (None: no cards, or nothing asked), and
        none to a phrasing asking what something is when the question asks how long or how
        often (`wanted`): "how long before risperidone kicks in?" is near "what is risperidone?"
        for the name alone. (A definition's card may well say why, or whether: "why didn't they
        say schizophrenia?" is the first-episode card's.) To a phrasing asking what a named
        medicine is, the mean of the cosine as said and with every name read as "this medicine",
        as the extractive generator reads a short question that names one: MiniLM weighs a name so
        much that "is dribbling at night a known thing with clozapine?" is near "what is
        clozapine?" (0.72), though it asks something else of it (0.49); "tell me about clozapine"
        asks what it is either way (0.93, 0.87)."""
        if not self.cards or not question.strip():
            return None
        similarities = self._matrix() @ self._embed([question])[0]
        if wanted(question) in ("duration", "frequency"):
            similarities = np.where(self._defining, -1.0, similarities)
        if len(self._defining_medicine) and (asked := self._unnamed_similarities(question)) is not None:
            rows = self._defining_medicine
            similarities[rows] = (similarities[rows] + asked[rows]) / 2
        return similarities

    def _unnamed_similarities(self, question: str) -> np.ndarray | None:
        """The question's cosine to every card phrasing with each medicine's name, in both, read
        as SOME_MEDICINE (None: the question names none)."""
        if not names_a_medicine(question):
            return None
        self._matrix()
        assert self._unnamed is not None
        return self._unnamed @ self._embed([without_medicines(question, SOME_MEDICINE)])[0]

    def _closest(self, similarities: np.ndarray, settings: Retrieval, *,
                 boundary_only: bool = False, on_sources: Collection[str] = ()) -> CardMatch | None:
        """The closest card (of the boundary cards; of the general cards drawing on `on_sources`),
        if clearly closer than the next of them; confident from `boundary_card_threshold` for
        those two, from `card_threshold` otherwise."""
        best: dict[str, tuple[float, int]] = {}
        for index, similarity in enumerate(similarities):
            owner = self._owners[index]
            if boundary_only and owner.kind != "boundary":
                continue
            if on_sources and (owner.kind != "answer" or not set(on_sources) & set(owner.sources)):
                continue
            if similarity > best.get(owner.id, (-1.0, 0))[0]:
                best[owner.id] = (float(similarity), index)
        if not best:
            return None
        ranking = sorted(best.values(), reverse=True)
        similarity, index = ranking[0]
        runner_up = ranking[1][0] if len(ranking) > 1 else -1.0
        confident_from = settings.boundary_card_threshold if boundary_only or on_sources else settings.card_threshold
        if similarity < min(settings.card_fallback, confident_from) or similarity - runner_up < settings.card_margin:
            return None
        return CardMatch(self._owners[index], similarity, self._phrasings[index],
                         confident=similarity >= confident_from)
