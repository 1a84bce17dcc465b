"""A reply composed from a vetted card or from the sources' own sentences, for one turn.

`Turn` is what a reply is composed for (the message, the question it answers, the route, the
sources given); `Composer` holds what composing reads (retrieval's keywords, the sources, the
embedder, the cards' safety facts). Nothing here chooses the route or the card: the graph does.
"""

from __future__ import annotations

from collections.abc import Callable, Collection, Mapping, Sequence
from dataclasses import dataclass, field
from typing import Protocol

from app.core import answer_types
from app.core.medicines import medicines_named, without_medicines
from app.core.records import Identification, SourceText
from app.core.text import citations_in, split_sentences, strip_citations
from app.generation.cards import led_by_answer
from app.generation.extractive import compose_extractive_answer, overview, pick_sentences
from app.generation.likeness import Embed
from app.generation.passages import leaning_run, passages
from app.kb.cards import AnswerCard
from app.prompts import reply

_EVERY = 1_000  # "every sentence" for pick_sentences


class Reader(Protocol):
    """What composing reads of retrieval: its sources and their keywords, its spelling."""

    @property
    def knowledge_base(self) -> Collection: ...

    def identify(self, question: str) -> Identification: ...

    def keywords_said(self, text: str, source_id: str) -> list[str]: ...

    def correct_spelling(self, text: str) -> str: ...


@dataclass(frozen=True)
class Turn:
    """What one reply is composed for. `message`: as the screen read it; `question`: what the turn
    answers, in words (the message, a rewrite that stands alone, or the question a "tell me more"
    or a choice from a menu leads back to); `resolved`: the message as read with the conversation
    ("" when it stood alone); `given`: the sources in the prompt; `topic`: what the conversation is
    about; `answers_before`: the bot's earlier replies, oldest first; `lead`: what the reply opens
    with (how to get help today, for someone unwell now). `adds_no_topic`: the message asks only
    for more ("tell me more", "why?"); `says_little` and `refers_back`: the question has few words
    of its own, and leans on something said before ("is that normal?")."""

    message: str
    question: str
    route: str
    identification: Identification | None = None
    resolved: str = ""
    boundary_kinds: Sequence[str] = ()
    given: Sequence[str] = ()
    follow_up: bool = False
    urgent: bool = False
    topic: Sequence[str] = ()
    answers_before: Sequence[str] = field(default_factory=tuple)
    lead: str = ""
    adds_no_topic: bool = False
    says_little: bool = False
    refers_back: bool = False


@dataclass(frozen=True)
class Composer:
    """`source_text`: a source by id; `safety_facts`: each kind of request's fact, as its card
    declares it; `kinds_answered`: the kinds some card answers; `fact_for`: a kind no card answers,
    its fact from the sources, else the profile's general one; `medicine_source_floor`: how well a
    sentence of a medicine's own source must speak to a request to be added."""

    reader: Reader
    source_text: Callable[[str], SourceText | None]
    embed: Embed
    safety_facts: Mapping[str, str]
    kinds_answered: Collection[str]
    fact_for: Callable[[str], str | None]
    medicine_source_floor: float

    def card_reply(self, turn: Turn, card: AnswerCard) -> str:
        """A card as this turn's reply: a boundary card, then the safety facts of the request's
        kinds it does not say, then what the request's topic adds; a general card (framed as a
        boundary reply on that route) with those facts and what it leaves out before its closing."""
        draft = card_draft(card, turn.route == "boundary", self.card_body(turn, card))
        if card.kind == "boundary":
            reasons = self.reasons_said(turn, card)
            return joined(draft, self.unsaid_facts(turn, draft),
                          self.what_the_card_leaves_out(turn, card, only=reasons)
                          or self.what_the_topic_adds(turn, card) or self.what_the_card_leaves_out(turn, card))
        return before_closing(draft, joined(self.unsaid_facts(turn, draft), self.what_the_card_leaves_out(turn, card)))

    def card_body(self, turn: Turn, card: AnswerCard) -> str:
        """A general card's sentences with the one that answers this turn's question first; a
        boundary card's opening on what the bot cannot do, when it fits the request."""
        if card.kind == "boundary":
            kinds = set(turn.boundary_kinds) & set(self.kinds_answered)
            # A card's opening names what it cannot do for its own kinds of request ("a particular
            # missed dose"); chosen for a request the screen read as none of them (by its topic's
            # words, or as the nearest card), it opens with what fits any request instead.
            fits = not kinds or kinds & set(card.requests)
            return card.body if fits else card.with_opening(reply("boundary_opening"))
        if card.kind != "answer":
            return card.body
        # Led by the words meant ("alchol" -> "alcohol"), as retrieval and composed answers read them.
        return led_by_answer(card.body, self.reader.correct_spelling(turn.question), self.embed)

    def what_the_topic_adds(self, turn: Turn, card: AnswerCard) -> str:
        """After a boundary card, what the source on the request's own topic says of it, when the
        card cites another: "should I stop my meds now I'm pregnant?" hears the pregnancy source
        too, not only why not to stop alone. The topic is read without medicine names, which
        every medicine source shares ("can I stop my olanzapine?" is not about smoking, though
        the smoking source names olanzapine), and must say one of the source's keywords; else the
        source about the medicine the request names (`medicine_s_own_source`)."""
        asked = turn.question
        found = self.reader.identify(without_medicines(asked))
        # The topic must be said in so many words: retrieval alone is sure of too much. Of the
        # sources found that the card does not cite, the one whose keywords the message says most
        # ("come off clozapine … because of all the blood tests": the clozapine source, which says
        # both, rather than the health checks source).
        candidates = found.candidates if found.outcome == "clear" else []
        said = {c.source_id: len(self.reader.keywords_said(asked, c.source_id)) for c in candidates
                if c.source_id not in card.sources and c.source_id in turn.given}
        topic = max((sid for sid in said if said[sid]), key=lambda sid: said[sid], default="") \
            or self.medicine_s_own_source(turn, card)
        if not topic:
            return ""
        doc = self.source_text(topic)
        if doc is None:
            return ""
        added = compose_extractive_answer([asked], [doc], self.embed, max_sentences=2, quoted=card.body)
        return added.removesuffix(reply("verification_reminder")).strip()

    def reasons_said(self, turn: Turn, card: AnswerCard | None) -> list[str]:
        """The card's reason sources (`CardMeta.reasons`) whose keywords the request says, read
        without medicine names, and the card does not say in a sentence of that source ("can I cut
        my tablets in half? they make me so restless": restlessness, of the side-effects source). A
        source the card cites may still leave the reason out: "talk to the family doctor (GP) soon"
        [S33] says nothing to "or is this just teenage stuff?"."""
        if card is None or not card.reasons or turn.route != "boundary":
            return []
        asked = self._asked_of(turn, card)
        return [sid for sid in card.reasons if self._left_out(asked, card, sid, as_reason=True)]

    def _asked_of(self, turn: Turn, card: AnswerCard) -> str:
        """The question as a card's leftovers are read: spelt as the knowledge base spells it, and
        after a boundary card without medicine names, which every medicine source lists."""
        asked = self.reader.correct_spelling(turn.question)
        return without_medicines(asked) if card.kind == "boundary" else asked

    def _left_out(self, asked: str, card: AnswerCard, source_id: str, as_reason: bool = False) -> set[str]:
        """The source's keywords the question says and the card does not. For a reason, only the
        card's sentences citing the reason's own source count: "such as avoiding weight gain"
        [S09], on how a medicine is chosen, names the weight a request to switch gives as its
        reason but does not speak to it."""
        said = self.reader.keywords_said
        card_says = cited_to(card.body, source_id) if as_reason else card.body
        return set(said(asked, source_id)) - set(said(card_says, source_id))

    def medicine_source(self, turn: Turn, card: AnswerCard | None) -> str:
        """The source titled after the medicine the request is about (the message or the
        conversation names it) that a boundary card does not cite, if any ("" otherwise)."""
        if card is None or card.kind != "boundary":
            return ""
        about = medicines_named(turn.resolved or turn.message)
        return next((source.id for source in self.reader.knowledge_base
                     if about & medicines_named(source.title) and source.id not in card.sources), "")

    def medicine_s_own_source(self, turn: Turn, card: AnswerCard) -> str:
        """The source about the medicine the request is about (the message or the conversation
        names it), when there is one, the card does not cite it, and a sentence of it speaks to the
        request (`medicine_source_floor`): a medicine with a source of its own has safety facts of
        its own ("I'm on clozapine", "can I start back on my normal dose tonight?": after a break of
        two days, not at the usual dose)."""
        request = turn.resolved or turn.message
        source = self.medicine_source(turn, card)
        doc = self.source_text(source) if source in turn.given else None
        # Only when it speaks to the request: the clozapine source has nothing on a drink at a wedding.
        best = pick_sentences([request], [doc], self.embed, max_sentences=1, quoted=card.body) if doc else []
        return source if best and best[0].score >= self.medicine_source_floor else ""

    def what_the_card_leaves_out(self, turn: Turn, card: AnswerCard, only: list[str] | None = None) -> str:
        """After a card, the sentence of its sources (or the turn's) on what the message names and
        the card does not: a card answers the common question ("is weed bad for me?"), and "is CBD
        oil ok?" names a keyword of the cannabis source that the card never says. The sentence
        must say that keyword; nothing is added when the card says them all. After a boundary
        card (when no other source's topic was added), it speaks to the reason the request gives
        ("should I go back to the old dose? I've felt dizzy since…"), read without medicine names,
        which every medicine source lists."""
        asked = self._asked_of(turn, card)
        missing: dict[str, set[str]] = {}
        docs: dict[str, SourceText] = {}
        # A source in the prompt only for a safety fact (`kinds_facts`) is not on what was asked.
        found = {c.source_id for c in turn.identification.candidates} if turn.identification else set()
        for_facts = set(citations_in(" ".join(self.kinds_facts(turn)))) - found
        retrieved = [s for s in turn.given if s not in for_facts]
        if only is None:
            pool = [*card.sources, *retrieved]
        elif only:
            # The turn's sources may speak to the reason too, and better than the reason source's
            # list: "if weight gain worries you, talk to your prescriber" [S23].
            pool = [*only, *retrieved]
        else:
            return ""
        for sid in dict.fromkeys(pool):
            unsaid = self._left_out(asked, card, sid, as_reason=only is not None)
            if unsaid and (doc := self.source_text(sid)):
                missing[sid], docs[sid] = unsaid, doc
        # For a reason, every sentence of its source is a candidate: the one that names it may be
        # far from the top ("so restless i want to climb the walls" is nearest tardive dyskinesia).
        most = {"max_sentences": _EVERY, "per_source": _EVERY} if only is not None else {}
        keywords = self.reader.keywords_said
        for picked in sorted(pick_sentences([asked], list(docs.values()), self.embed, quoted=card.body, **most),
                             key=lambda p: -p.score):
            if picked.leans_back or not set(keywords(picked.text, picked.source_id)) & missing[picked.source_id]:
                continue
            # With what leans on it ("CBD is another chemical in cannabis. It does not make people
            # high…"); of a list nothing leans on, the items that say it ("Common side effects:
            # dizziness: …", not all seven).
            found_passages = passages(docs[picked.source_id].text)
            passage, sentences = found_passages[picked.position], [p.text for p in found_passages]
            leaning = sentences[picked.position + 1:leaning_run(sentences, picked.position)]
            keep = [i for i, item in enumerate(passage.items)
                    if set(keywords(item, picked.source_id)) & missing[picked.source_id]]
            if leaning:
                first = passage.text
            elif keep:
                first = passage.with_items(keep)
            else:
                first = picked.text
            return " ".join(f"{sentence} [{picked.source_id}]" for sentence in [first, *leaning])
        return ""

    def kinds_facts(self, turn: Turn) -> list[str]:
        """On the boundary route, the safety fact of each kind of request the screen read the
        message as (its likeliest kind, and any nearly as likely: see `CardMeta.safety_fact`),
        whichever card or sources answer it: "can I tell my girlfriend it's fine to quit her
        risperidone?" gets the card on someone else's medicine (consent) and hears that an
        antipsychotic is never stopped alone; "im drooling on clozapine, can i cut the dose
        myself?" gets the clozapine card's side effects, then that the dose is not changed alone.
        A kind no card answers gets the sources' own sentence for it (`SourcedFacts`), else the
        profile's general one."""
        if turn.route != "boundary":
            return []
        facts = [self.safety_facts.get(kind) if kind in self.kinds_answered else self.fact_for(kind)
                 for kind in turn.boundary_kinds]
        return list(dict.fromkeys(f for f in facts if f))

    def unsaid_facts(self, turn: Turn, reply_so_far: str) -> str:
        """The kinds' safety facts (`kinds_facts`) that the reply does not already say."""
        said = {strip_citations(s) for s in split_sentences(reply_so_far)}
        return " ".join(f for f in self.kinds_facts(turn) if strip_citations(f) not in said)

    def sources_named(self, text: str) -> set[str]:
        """The sources whose own keywords the message says ("pregnant", "weight gain")."""
        return sources_named(self.reader, text)

    def extractive_answer(self, turn: Turn) -> str:
        """An answer made of the sources' own sentences, for the turn's question."""
        identification = turn.identification
        # A follow-up is answered on its own words ("is it free?", "is it safe with alcohol?"):
        # what it is about (the topic, the medicine named before) already chose the sources. A
        # model's rewrite that stands alone ("is family intervention free?") is its own words;
        # "tell me more" is answered on the question before it (identify_sources sets `question`).
        asked = turn.question
        parts = identification.parts if len(identification.parts) > 1 else [asked]
        if identification.context and turn.says_little and not turn.refers_back \
                and not self.sources_named(asked):
            # "any tips?" after "I always freeze and forget what to say": what it asks is all in
            # the conversation, so its answer is chosen by what the conversation said with it too.
            # A message with words of its own ("then who do I talk to?") is answered on them.
            parts = [asked, f"{identification.context} {asked}"]
        # The best source for each part of the question first (candidates come best first).
        chosen: list[str] = []
        for part in parts:
            best = next((c.source_id for c in identification.candidates if c.part in (part, None)), None)
            if best and best not in chosen:
                chosen.append(best)
        # Then the other sources found for it, up to three in all: later ones must earn their
        # sentences. Sources still in play from earlier turns are context for a model, not
        # material for this answer ("does it hurt?" about an injection is not about clozapine).
        found = [*chosen, *(c.source_id for c in identification.candidates)]
        usable = list(dict.fromkeys(sid for sid in found if sid in turn.given))[:3]
        docs = [d for sid in usable if (d := self.source_text(sid))]
        # A source about another medicine adds nothing true of the one asked about, and its
        # sentences would read as said of it; the best source stays, whatever it is.
        about = turn.resolved or asked
        docs = docs[:1] + [d for d in docs[1:] if not _about_another_medicine(d.title, about)]
        continues = turn.follow_up or bool(identification.context)
        if docs and not continues and not answer_types.asks_anything(asked) and turn.route == "answer" \
                and not turn.urgent:  # someone unwell now needs what to do, not an overview
            # It only says something ("my brother started clozapine 2 weeks ago"): what its topic
            # is; the suggestions offer what to ask next.
            return "\n\n".join([overview(docs[0]), reply("verification_reminder")])
        # "Tell me more" gets what was not said yet; a follow-up that asks something of its own
        # hears its best answer, said before or not ("does it need blood tests?" after the
        # clozapine card, "and after a first episode specifically?").
        earlier = list(turn.answers_before) if turn.follow_up else []
        more = turn.adds_no_topic
        said = earlier if more else []
        # "can it be permanent?" continuing the conversation: "it" is what the last answer was about.
        # What it was about is what that answer led with, not all it said ("whats NMS" answered by
        # a card on NMS and tardive dyskinesia: "it" is NMS).
        focus = lead_of((["", *turn.answers_before])[-1]) if continues and turn.refers_back else ""
        # The medicine "it" stands for ("does it need blood tests?" after clozapine) orders what is
        # quoted as a medicine named would; the words stay the message's own. The message as read
        # with its references resolved: the topic's latest follow-up when read with the question
        # before (see identify_sources), else the message with "it" replaced by what it names.
        read = (["", *turn.topic])[-1] if identification.context else turn.resolved
        meant_medicines = medicines_named(read) - medicines_named(asked) if turn.refers_back else frozenset()
        # Sentences are chosen by the words meant ("alchol" -> "alcohol"), as retrieval read them.
        meant = [self.reader.correct_spelling(p) for p in parts]
        answer = compose_extractive_answer(meant, docs, self.embed, already_said=said,
                                           said_before=[] if more else earlier, focus=focus,
                                           quoted=turn.lead,  # the lead says how to get help
                                           meant_medicines=meant_medicines)
        if turn.route == "boundary":  # what the bot cannot do, the facts, who to ask
            body = answer.removesuffix(reply("verification_reminder")).strip()
            answer = joined(reply("boundary_opening"), body, self.unsaid_facts(turn, body),
                            reply("boundary_who_to_ask"))
        return answer


def _about_another_medicine(title: str, question: str) -> bool:
    """A source titled after a medicine the question does not name, while the question names
    one: the clozapine source's side effects are not olanzapine's."""
    asked, about = medicines_named(question), medicines_named(title)
    return bool(asked and about and not asked & about)


def sources_named(reader: Reader, text: str) -> set[str]:
    """The sources whose own keywords the message says ("pregnant", "weight gain")."""
    return {source.id for source in reader.knowledge_base if reader.keywords_said(text, source.id)}


def card_draft(card: AnswerCard, boundary: bool = False, body: str = "") -> str:
    """A card as the draft (`body`: its sentences in the order delivered, see `led_by_answer`).
    On the boundary route a general card is framed as one: what the bot cannot do first, who to
    ask last."""
    body = body or card.body
    if boundary and card.kind == "answer":
        return "\n\n".join([reply("boundary_opening"), body, reply("boundary_who_to_ask")])
    return card.draft(reply("verification_reminder"), body)


def lead_of(answer: str) -> str:
    """An answer's first sentence and those that lean on it ("Tardive dyskinesia is… It causes…
    It can be long-lasting…"): what it answered."""
    sentences = split_sentences(answer)
    return " ".join(sentences[:leaning_run(sentences, 0)])


def before_closing(draft: str, addition: str) -> str:
    """`addition` as the last paragraph of an answer's facts: before its closing paragraph (the
    reminder to check with the care team, or a boundary reply's who to ask)."""
    for closing in (reply("verification_reminder"), reply("boundary_who_to_ask")):
        if addition and draft.endswith(closing):
            return joined(draft.removesuffix(closing).rstrip(), addition, closing)
    return joined(draft, addition)


def joined(*parts: str) -> str:
    return "\n\n".join(part for part in parts if part)


def cited_to(text: str, source_id: str) -> str:
    """The sentences of `text` that cite `source_id`."""
    return " ".join(s for s in split_sentences(text) if source_id in citations_in(s))
