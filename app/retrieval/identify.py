"""Which sources answer a question: ranked ids with confidences, sorted into three outcomes.

Retrieval (the offline default): each sub-question is spelling-corrected, embedded and searched in
Chroma and BM25; the two chunk rankings are fused (RRF) and folded into a source ranking. The
ranking says which source is best; the confidence says whether it is good enough, so it is built
from absolute evidence rather than ranks: the source's best cosine similarity, the share of the
question's distinctive words the source contains, less how much of the question's meaning lies in
words the whole knowledge base never uses (a question about a topic we lack is full of such
words; an ordinary word we happen never to write, "actually", "went", changes little). The summary
strategy (an LLM reading the source summaries) can replace or be blended with it.
"""

from __future__ import annotations

import copy
import math
import re
import time
from collections.abc import Collection

from app.core.answer_types import wanted
from app.core.config import Settings
from app.core.errors import ModelError
from app.core.medicines import medicines_named
from app.core.records import Candidate, Identification, ModelCall
from app.core.spelling import Speller, corpus_words, is_everyday_word
from app.core.text import split_sentences
from app.kb.examples import NOT_COVERED
from app.kb.loader import KnowledgeBase
from app.retrieval.examples import ExampleClassifier
from app.retrieval.fusion import by_source, ranked, rrf
from app.retrieval.index import ChunkIndex
from app.retrieval.outcome import Scored, blended, decide, lifted
from app.retrieval.parts import split_parts
from app.retrieval.references import before_reference, refers_back
from app.retrieval.summaries import SummaryChooser


def _sigmoid(x: float) -> float:
    return 1.0 / (1.0 + math.exp(-max(-60.0, min(60.0, x))))


class SourceIdentifier:
    def __init__(self, kb: KnowledgeBase, index: ChunkIndex, settings: Settings,
                 chooser: SummaryChooser | None = None, examples: ExampleClassifier | None = None):
        self.knowledge_base = kb
        self.index = index
        self.examples = examples  # learned from the knowledge base's example messages, if it has any
        self.settings = settings
        self.chooser = chooser
        self.index_report = None  # set by open_identifier: what opening the index had to do
        words, known = corpus_words(c.text for c in index.chunks), index.embedder.known_words()
        cutoff = settings.retrieval.spelling_cutoff
        self.speller = Speller(words, known, cutoff=cutoff, phonetic=True, informal=True)
        self.english_speller = Speller(words, known, cutoff=cutoff, english=True)
        # Each source's keywords with a name or term of its own that no example message uses
        # ("Invega Trinza", "zuclopenthixol"): the examples never learnt them, so their reading of
        # a message that says one is no guide. Everyday words ("children") they read by meaning.
        learnt = {t for s in kb.examples for m in s.messages for t in index.tokenize(m)}
        self._unlearnt_keywords = {source.id: {k for k in source.keywords if any(
            not is_everyday_word(w) and set(index.tokenize(w)) - learnt for w in re.findall(r"\w+", k))}
            for source in kb}

    def follow_index(self) -> None:
        """Where a turn starts: read a rebuilt index from now on, if a rebuild has switched to one."""
        self.index.follow_pointer()

    def with_settings(self, settings: Settings) -> SourceIdentifier:
        """The same knowledge base and index, read with other retrieval settings (thresholds,
        strategy): cheap, because nothing is reloaded. Chunking settings are the index's own."""
        twin = copy.copy(self)
        twin.settings = settings
        return twin

    # -- the public call ---------------------------------------------------------------------
    def identify(self, question: str, context: str = "", own_topic: bool | None = None, referred: bool = False,
                 last_sources: Collection[str] = ()) -> Identification:
        """Which sources answer `question`; `context` is what the conversation is about so far
        (its topic question and latest follow-up), empty for a first message; `own_topic`: the
        caller has already asked `names_own_topic` (None: asked here when it matters); `referred`:
        the caller resolved a reference in it ("is it free?" -> "is CBT for psychosis free?"), so
        it still leans on the topic; `last_sources`: what the last answer drew on."""
        started = time.perf_counter()
        r = self.settings.retrieval
        used_context = ""
        sure: set[str] = set()  # clear sources held back for want of words (see the cap below)
        parts = split_parts(question, min_words=r.min_part_words, max_parts=r.max_parts) or [question]
        calls: list[ModelCall] = []
        llm = self._ask_llm(question, calls) if self.chooser and r.strategy != "retrieval" else None
        if llm is not None and r.strategy == "summaries":
            scored = [ranked(llm)]
        else:
            # In a conversation, each part of a message is also read with what it is about
            # ("what about uni? … can they make changes for her?"); see `_with_context` for which
            # reading counts.
            follow_up = bool(context.strip())
            texts = [*parts, *(f"{context} {part}" for part in parts)] if follow_up else parts
            sentences = self._sentences_of(parts)
            found = self.score([*texts, *(sentence for _, sentence in sentences)])
            scored = lifted(found[: len(texts)], sentences, found[len(texts):])
            if follow_up:
                if own_topic is None:
                    own_topic = self.names_own_topic(question)
                readings = [self._with_context(alone, read_on, part if len(parts) > 1 else question, context, own_topic,
                                               referred)
                            for part, alone, read_on in zip(parts, scored[: len(parts)], scored[len(parts):], strict=True)]
                scored = [reading for reading, _ in readings]
                used_context = context if any(continues for _, continues in readings) else ""
            if llm is not None:
                scored = [blended(s, llm, r.summaries_weight) for s in scored]
            if not follow_up and len(self._terms(question)) < r.clear_min_terms and wanted(question) is None:
                # Too little said to be sure which side of the topic is wanted: at most a "did
                # you mean" ("olanzapine?"). "What is olanzapine?" says it: a definition.
                cap = r.clear_threshold - 1e-6
                sure = {sid for s in scored for sid, conf in s if conf >= r.clear_threshold}
                scored = [[(sid, min(conf, cap)) for sid, conf in s] for s in scored]
        outcome, candidates = decide(parts, scored, len(scored) == len(parts), r, self.knowledge_base)
        if outcome == "middling" and not used_context:
            candidates = self._plausible(question, candidates)
            outcome = "middling" if candidates else "none"
            if len(candidates) == 1 and candidates[0].source_id in sure:
                # A menu of one offers no choice: the one source it could be, and was clearly, is
                # answered ("what treatments are there", one word of its own).
                outcome = "clear"
        if outcome == "middling" and used_context and candidates[0].source_id in last_sources:
            # A message that continues the conversation and reads likeliest as the source the
            # last answer drew on is about it ("can it be permanent?" after NMS): the conversation
            # has settled which source it is, where the words alone are unsure.
            outcome, candidates = "clear", candidates[:1]
        return Identification(outcome=outcome, candidates=candidates, parts=parts, model_calls=calls,
                              context=used_context, latency_ms=(time.perf_counter() - started) * 1000)

    def _sentences_of(self, parts: list[str]) -> list[tuple[int, str]]:
        """The sentences of the parts that have several (with the part's index), each with enough
        words to search on."""
        r = self.settings.retrieval
        return [(n, sentence) for n, part in enumerate(parts) if len(sentences := split_sentences(part)) > 1
                for sentence in sentences if len(self._terms(sentence)) >= r.clear_min_terms]

    def names_own_topic(self, question: str) -> bool:
        """Whether what the message says before its first reference word names a topic clearly
        ("my brother has schizophrenia, does that mean I'll get it too?"): then "it" and "that"
        may point into the message itself, not back to the conversation."""
        if not refers_back(question):
            return False
        lead = before_reference(question)
        if len(self._terms(lead)) < self.settings.retrieval.clear_min_terms:
            return False
        found = self.score([lead])[0]
        return bool(found) and found[0][1] >= self.settings.retrieval.clear_threshold

    def keywords_said(self, text: str, source_id: str) -> list[str]:
        """The source's keywords `text` says in so many words ("pregnant", "weight gain"),
        distinctive ones: every word of it is used by at most half the sources, so the illness's
        own name does not count."""
        return self._keywords_in(set(self._terms(text)), source_id)

    def _names_unlearnt_keyword(self, said: set[str], source_id: str) -> bool:
        """Whether `said` holds one of the source's keywords with a word no example message uses."""
        unlearnt = self._unlearnt_keywords.get(source_id)  # most sources have none: no keyword to read
        return bool(unlearnt) and bool(unlearnt & set(self._keywords_in(said, source_id)))

    def _keywords_in(self, said: set[str], source_id: str) -> list[str]:
        """The source's distinctive keywords whose every term is in `said` (see `keywords_said`)."""
        source = self.knowledge_base.get(source_id)
        if source is None:
            return []
        half = len(self.index.source_terms) / 2
        return [keyword for keyword in source.keywords if (terms := self._terms(keyword)) and set(terms) <= said
                and all(self.index.term_sources.get(t, 0) <= half for t in terms)]

    def correct_spelling(self, text: str) -> str:
        """Misspelt words and texting forms read as the knowledge base's words ("alchol" ->
        "alcohol", "gonna" -> "going to")."""
        return self.speller.correct(text)

    def correct_english(self, text: str) -> str:
        """Misspelt words and texting forms read as English ("thnks" -> "thanks", "shuold" ->
        "should"), the knowledge base's words among it: how the input screen reads a message."""
        return self.english_speller.correct(text)

    # -- retrieval ---------------------------------------------------------------------------
    def score(self, texts: list[str]) -> list[Scored]:
        """Each text's sources, ranked by fused retrieval, with confidences."""
        r, index = self.settings.retrieval, self.index
        corrected = [self.correct_spelling(t) for t in texts]
        # Each text also without the words the knowledge base never uses, embedded in the same
        # batch: how far that moves its meaning says how much of the question those words carry.
        reduced = [self._without_unknown_words(t) for t in corrected]
        changed = [n for n, (c, t) in enumerate(zip(corrected, reduced, strict=True)) if t and t != c]
        vectors = index.embedder.encode([*corrected, *(reduced[n] for n in changed)])
        unknown_shares = [0.0 if t == c else 1.0 for c, t in zip(corrected, reduced, strict=True)]
        for row, n in enumerate(changed, start=len(corrected)):
            unknown_shares[n] = max(0.0, 1.0 - float(vectors[n] @ vectors[row]))
        dense = index.dense(vectors[: len(corrected)], r.dense_candidates)
        learned = (self.examples.probabilities(vectors[: len(corrected)]) if self.examples
                   else [None] * len(corrected))
        # The evidence whose confidence is the clear threshold (none when nothing can be clear).
        clear = (r.confidence_midpoint + r.confidence_temperature
                 * math.log(max(r.clear_threshold, 1e-9) / (1 - r.clear_threshold)) + 1e-6
                 if r.clear_threshold < 1.0 else None)
        results = []
        for text, hits, unknown, probabilities in zip(corrected, dense, unknown_shares, learned, strict=True):
            lexical = index.lexical(text, r.lexical_candidates)
            fused = rrf([[cid for cid, _ in hits], [cid for cid, _ in lexical]], k=r.rrf_k)
            sources = by_source(fused, index.source_of, top_n=r.source_top_chunks)
            best_cos: dict[str, float] = {}
            for cid, similarity in hits:
                best_cos.setdefault(index.source_of[cid], similarity)
            floor = hits[-1][1] if hits else 0.0  # a source outside the dense top is no closer
            terms = self._terms(text)
            shortlist = [sid for sid, _ in ranked(sources)]
            if probabilities:  # a source the examples find likely is weighed even if fusion missed it
                chance = 1 / len(probabilities)
                shortlist += [sid for sid, p in probabilities.items()
                              if p >= 2 * chance and sid != NOT_COVERED and sid not in sources]
            # The examples never lower a source when the message says one of its own keywords in
            # words they never saw: they read a name only the sources use ("Invega Trinza") as
            # about nothing we cover.
            said = set(terms)
            evidence = {source_id: (best_cos.get(source_id, floor)
                                    + r.lexical_weight * self._coverage(terms, source_id)
                                    - r.unknown_word_penalty * unknown
                                    + self._learned_evidence(source_id, probabilities,
                                                             named=self._names_unlearnt_keyword(said, source_id)))
                        for source_id in shortlist}
            if probabilities and clear is not None:
                # A source the examples are sure of is at least a clear match, however far its
                # words are from the message's ("how do I respond when he says the neighbours are
                # spying on him?": family life). Below retrieval's own sure matches, it keeps
                # their order.
                for source_id in shortlist:
                    if probabilities.get(source_id, 0.0) >= r.examples_sure:
                        evidence[source_id] = max(evidence[source_id], clear)
            # Fusion picks the shortlist; the absolute evidence settles the order within its head
            # (all of it when the examples weigh in: they are evidence fusion never saw). Ordered
            # by evidence, not confidence, which saturates: two sources sure at 1.0 stay in order.
            depth = len(shortlist) if probabilities else r.rerank_depth
            order = sorted(shortlist[:depth], key=lambda sid: -evidence[sid]) + shortlist[depth:]
            results.append([(sid, _sigmoid((evidence[sid] - r.confidence_midpoint) / r.confidence_temperature))
                            for sid in order])
        return results

    def _learned_evidence(self, source_id: str, probabilities: dict[str, float] | None, *,
                          named: bool = False) -> float:
        """What the example classifier adds to a source's evidence: the log of its probability
        over chance, or over "none" when "none" is likelier than chance, clipped and weighed (see
        `Retrieval.examples_weight`). A classifier that cannot tell adds nothing; one sure of
        the source ("the radio presenters are sending her messages": delusions) lifts it, one
        sure of another source or of "none" lowers it, unless the message names the source in
        words the examples never learnt (`named`)."""
        if not probabilities:
            return 0.0
        r = self.settings.retrieval
        baseline = max(probabilities.get(NOT_COVERED, 0.0), 1 / len(probabilities))
        log_odds = math.log(max(probabilities.get(source_id, 0.0), 1e-9) / baseline)
        return r.examples_weight * min(r.examples_clip_up, max(0.0 if named else -r.examples_clip_down, log_odds))

    def _without_unknown_words(self, text: str) -> str:
        """`text` without the words whose stems the knowledge base never uses ("" when no known
        content word is left). "What does a CPN actually do" loses "actually" and means the
        same; "how do I renew my passport" loses "passport" and means little."""
        if not self._terms(text):
            return ""
        kept = [piece for piece in re.split(r"(\W+)", text)
                if not any(t not in self.index.term_sources for t in self.index.tokenize(piece))]
        reduced = "".join(kept)
        return reduced if self._terms(reduced) else ""

    def _coverage(self, terms: list[str], source_id: str) -> float:
        """How much of the question the source speaks to: the mean over the question's terms of
        idf / (the highest idf) for the terms the source uses, 0 for the others. Words every
        source uses ("help", "feel") count for little, so a vague question does not look covered."""
        if not terms:
            return 0.0
        used = self.index.source_terms.get(source_id, frozenset())
        top = self.index.source_idf("")  # a term no source uses has the highest idf
        return sum(self.index.source_idf(t) / top for t in terms if t in used) / len(terms)

    def _terms(self, text: str) -> list[str]:
        """The question's content words as the knowledge base would write them (spelling and
        texting forms corrected: "u" is "you", no content word), stemmed, stop words and numbers
        dropped."""
        return [t for t in dict.fromkeys(self.index.tokenize(self.correct_spelling(text))) if not t.isdigit()]

    def _with_context(self, alone: Scored, with_context: Scored, question: str, context: str,
                      own_topic: bool = False, referred: bool = False) -> tuple[Scored, bool]:
        """Which reading of a message in a conversation counts, and whether it continues the
        conversation. One that refers back ("how long does it go on for?", "what about uni? can
        they make changes for her…", whatever its length) is read with the conversation's topic:
        what it names alone ("how long") is not its topic. One that says almost nothing itself
        ("what should I do?") or that its own words leave unsure ("what happens when you're
        discharged?") also continues the conversation, each source keeping the better of its two
        readings. One that stands on its own words is a new question, answered or declared not
        covered ("how do I renew my passport?") by itself, and so does one whose reference has its
        antecedent in the message (`own_topic`: what comes before the reference names a topic
        clearly, "my brother has schizophrenia, does that mean I'll get it too?"). One whose words
        the example classifier cannot place ("anything we can do at home to help her?") continues
        the conversation too: retrieval is sure of the words of almost any message."""
        r = self.settings.retrieval
        own = alone[0][1] if alone else 0.0
        refers = (referred or refers_back(question)) and not own_topic
        learned = self._example_reading(question)
        # A message that turns to another medicine than the conversation's ("what is risperidone?"
        # after clozapine's blood tests), or to one no source speaks of ("tell me about lithium"
        # after negative symptoms), is about that one, unless it leans back ("and what about
        # olanzapine?", "does olanzapine do that too?").
        named = medicines_named(question)
        other_medicine = bool(named and (before := medicines_named(context)) and not named & before) \
            or bool(named - self.knowledge_base.medicines)
        if other_medicine and not refers:
            return alone, False
        continues = (refers or len(self._terms(question)) < r.follow_up_min_terms
                     or r.none_threshold <= own < r.clear_threshold
                     # The examples cannot tell which source its own words are about ("anything we
                     # can do at home to help her?"): retrieval's sureness is of the words, not the topic.
                     or (not own_topic and learned is not None
                         and max(p for sid, p in learned.items() if sid != NOT_COVERED) < r.follow_up_unsure))
        if not continues or not with_context:
            return alone, False
        # Not covered is not made covered by the conversation. One that does not refer back is
        # read on its own words ("how do I renew my passport?"); one that refers back, on its own
        # words and with what it refers to: "how much does it cost in America?" after depot
        # injections is about cost abroad either way, "is it free?" after family intervention is
        # about family intervention.
        not_covered = (learned or {}).get(NOT_COVERED, 0.0)
        if refers:
            not_covered = min(not_covered, (self._example_reading(f"{context} {question}") or {}).get(NOT_COVERED, 0.0))
        if not_covered >= (r.reference_not_covered if refers else r.follow_up_not_covered):
            return alone, False
        if refers:  # what it names alone ("how long", "the team") is not its topic
            return with_context, True
        merged = dict(with_context)
        for sid, conf in alone:
            merged[sid] = max(conf, merged.get(sid, 0.0))
        return ranked(merged), True

    def _example_reading(self, question: str) -> dict[str, float] | None:
        """The example classifier's probabilities for the message on its own words (None without
        examples)."""
        if self.examples is None:
            return None
        return self.examples.probabilities(self.index.embedder.encode([self.correct_spelling(question)]))[0]

    def _reads_not_covered(self, question: str, threshold: float) -> bool:
        """Whether the example classifier reads the message, on its own words, as about nothing
        the knowledge base covers with at least `threshold` probability."""
        return (self._example_reading(question) or {}).get(NOT_COVERED, 0.0) >= threshold

    # -- the summary strategy ----------------------------------------------------------------
    def _ask_llm(self, question: str, calls: list[ModelCall]) -> dict[str, float] | None:
        assert self.chooser is not None
        try:
            chosen, call = self.chooser.choose(question)
        except ModelError as error:  # retrieval still answers; the failed call goes in the trace
            if error.call is not None:
                calls.append(error.call)
            return None
        calls.append(call)
        return chosen

    # -- the outcome -------------------------------------------------------------------------
    def _plausible(self, question: str, candidates: list[Candidate]) -> list[Candidate]:
        """The choices worth offering for "did you mean": each containing some of what the
        question asks. "Will schizophrenia mess up his visa application?" finds sources only
        through the illness's name, which every source uses: a menu of them is no guess at what
        was asked; "not covered", with who can help, is."""
        if self._reads_not_covered(question, self.settings.retrieval.menu_not_covered):
            return []  # the examples read it as about nothing we cover: a menu would be no guess either
        terms = self._terms(question)
        floor = self.settings.retrieval.menu_min_coverage
        return [c for c in candidates if self._coverage(terms, c.source_id) >= floor]
