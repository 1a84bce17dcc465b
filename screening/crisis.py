"""The input screen's reading of one message (`assess`): whether it is a crisis, small talk or a
request about the writer's own case, and its language; and the readings of the conversation's last
few messages (`read_alone`), which the answers after a crisis and the crisis judge both look back at.

Crisis detection has three layers, in order. (1) Other languages: the core crisis concepts in each
language's own words (crisis_languages.py), so a crisis never meets the "English only" notice.
(2) A small set of high-precision English patterns (crisis_patterns.yaml: each with an id and
tested examples), read after slang, one-letter misspellings and idioms are normalised. (3) The
learned layer (screen_model.py, a shipped artefact) for everything subtler: veiled farewells, means
questions, third-person risk, medical emergencies, in English and (its own variant) in other
languages; it also gives the small-talk probability the router uses.
Only a flag from the learned layer alone, below its confident line, may be cleared by an LLM's
second look; a language or pattern hit never is.
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass, field, replace
from typing import TYPE_CHECKING, Protocol, TypeVar

from app.core.learning.encoder import Encoder
from app.core.text import split_sentences
from screening import crisis_languages
from screening.crisis_text import marked_and_read, normalise, pattern_hit

if TYPE_CHECKING:
    from screening.request_kind import RequestKindModel
    from screening.screen_model import Reading, ScreenModel

T = TypeVar("T")

# How many earlier user messages a crisis is remembered for: the answers to them keep the contacts,
# and the crisis judge holds their drafts to it.
HISTORY_TURNS = 3
# The kind of crisis each concept of the language lexicon says (screening/crisis_languages.yaml),
# so a crisis in another language gets the reply for its kind (an overdose: a doctor now).
LANGUAGE_CONCEPT_KINDS = {
    "die_wish": "direct_suicidal", "self_harm": "self_harm_now", "overdose_taken": "overdose_taken",
    "method": "means_method", "farewell": "veiled_farewell", "third_person": "third_person_danger",
    "harm_others": "harm_to_others", "psychosis": "psychosis_danger", "medical": "medical_emergency",
}

# How near its threshold the learned request probability is unsure. Cross-validated on the training
# data (threshold 0.35): from 0.15 up, 0.97 of the requests; from 0.55 up, 0.95 of the flags right.
PERSONAL_UNSURE = 0.2


@dataclass(frozen=True)
class Assessment:
    """What the screen concluded about one message, and how sure it is."""

    crisis: bool
    score: float
    layer: str = ""  # "language:xx", "pattern:<id>", "model", "model:languages" or ""
    evidence: list[str] = field(default_factory=list)
    small_talk: float = 0.0
    small_talk_kind: str = ""  # the learned layer's likeliest kind of small talk ("farewell", "thanks")
    # the kinds of request about one's own case it may be ("missed_dose"), likeliest first
    boundary_kinds: list[str] = field(default_factory=list)
    crisis_kind: str = ""  # its likeliest kind of crisis ("medical_emergency", "self_harm_now")
    personal_advice: bool = False  # asks for advice on the writer's own case (learned layer)
    urgent: bool = False  # describes someone unwell now who needs help today (learned layer)
    clearable: bool = False  # a learned-only flag below its confident line: an LLM may clear it
    english: bool = True  # the learned language identifier's reading (not read for a pattern hit)
    uncertain: bool = False  # no crisis, but close enough that an LLM should take a second look
    personal_unsure: bool = False  # the request probability is near its threshold: an LLM may decide
    threshold: float = 0.5  # the learned layer's crisis line for this message's reader
    language: str = ""  # the other language it is written in ("de", "hi", …); "" for English

    @property
    def unsure_crisis(self) -> bool:
        """A crisis only the English learned layer saw, below its confident line: more often a false
        alarm than one it is sure of ("it's my 30th tonight" after naming quetiapine)."""
        return self.crisis and self.clearable and self.layer == "model"


class Screens(Encoder, Protocol):
    """What reading a message needs (`Resources` provides it): the screen's models, the English
    speller, and a memory of texts already read."""

    screen_model: ScreenModel
    request_kind: RequestKindModel
    correct_english: Callable[[str], str] | None

    def remember(self, kind: str, text: str, compute: Callable[[], T]) -> T: ...


def assess(text: str, res: Screens) -> Assessment:
    """The screen's reading of one message (remembered: the same text is read again later)."""
    return res.remember("crisis.assess", text, lambda: _assess(text, res))


def _assess(text: str, res: Screens) -> Assessment:
    if not text or not text.strip():
        return Assessment(False, 0.0)
    if found := crisis_languages.find_concept(text):
        code, concept, words = found
        return Assessment(True, 1.0, f"language:{code}", [words], crisis_kind=LANGUAGE_CONCEPT_KINDS.get(concept, ""),
                          english=False, language=code)
    if hit := pattern_hit(text):
        # The learned layer still says what kind of crisis it is ("medical_emergency" gets its own reply).
        kind = res.screen_model.read(normalise(text, idioms="marked")).crisis_kind
        return Assessment(True, 1.0, f"pattern:{hit[0]}", [hit[1]], crisis_kind=kind)
    english = res.screen_model.is_english(text)
    if english:
        reading, kinds = _read_english(text, res)
    else:
        reading = res.screen_model.read_other_language(text)
        kinds = [reading.boundary_kind] if reading.boundary_kind else []
    language = "" if english else res.screen_model.language_of(text)
    if reading.is_crisis:
        return Assessment(True, reading.crisis, "model" if english else "model:languages",
                          split_sentences(text) or [text], small_talk=reading.small_talk,
                          crisis_kind=reading.crisis_kind, threshold=reading.threshold,
                          clearable=reading.crisis < reading.confident, english=english, language=language)
    return _question(reading, kinds, english, language)


def as_question(text: str, res: Screens) -> Assessment:
    """An English message the learned layer read as a crisis, unsure, read as the question it also
    is (what it asks, whose case, how urgent): for a screen that cleared the crisis, reading it
    with the conversation or by the screener's second look."""
    return res.remember("crisis.as_question", text, lambda: _question(*_read_english(text, res), True, ""))


def request_kinds(text: str, res: Screens) -> list[str]:
    """The kinds of request an English message makes, likeliest first: for a message read with
    the conversation ("can I stop it?" as "can I stop olanzapine?")."""
    return res.remember("crisis.request_kinds", text, lambda: res.request_kind.read(_as_meant(text, res)[1]))


def _question(reading: Reading, kinds: list[str], english: bool, language: str) -> Assessment:
    personal = reading.personal >= reading.personal_threshold
    return Assessment(False, reading.crisis, small_talk=reading.small_talk, english=english, language=language,
                      small_talk_kind=reading.small_talk_kind, boundary_kinds=kinds,
                      crisis_kind=reading.crisis_kind, personal_advice=personal, threshold=reading.threshold,
                      # A request whose likeliest kind is someone unwell now is urgent, though its
                      # share of the request's probability may not reach the urgent line alone.
                      urgent=reading.urgent >= reading.urgent_threshold or (personal and kinds[:1] == ["urgent"]),
                      uncertain=reading.crisis >= reading.second_look,
                      personal_unsure=abs(reading.personal - reading.personal_threshold) < PERSONAL_UNSURE)


def _read_english(text: str, res: Screens) -> tuple[Reading, list[str]]:
    """The learned layer's reading of an English message, and its request kinds (from the model
    that learned them from requests alone), with misspelt words read as English ("shuold i have two
    tomorow" as "should i have two tomorrow"): the models learned mostly from words spelt right,
    and a message full of slips read as written was heard as something else, a request as a
    question about sleep, a question about an extra tablet as an overdose. Whether it asks about
    the writer's own case is read of what its idioms say: the crisis reading sees a mark where
    "cut down on" was, and so would hear "should I cut down on my tablets" ask nothing of the
    writer's own ("should I reduce my tablets" does)."""
    marked, meant = _as_meant(text, res)
    reading = res.screen_model.read(marked)
    if meant != marked:
        asked = res.screen_model.read(meant)
        reading = replace(reading, personal=asked.personal, boundary_kind=asked.boundary_kind)
    return reading, res.request_kind.read(meant)


def _as_meant(text: str, res: Screens) -> tuple[str, str]:
    """A message spelt right, with its idioms marked (as the crisis reading reads it) and read as
    what they say (as a request is read)."""
    return marked_and_read(res.correct_english(text) if res.correct_english else text)


def answerable_emergency(text: str, res: Screens) -> bool:
    """A medical emergency that only the learned layer reads ("a fever and a sore throat on
    clozapine"): the answer graph may answer it with how to get medical help first and what the
    sources say. Danger said in so many words (a pattern: not breathing, an overdose taken) and
    every other kind of crisis get the crisis reply alone."""
    found = assess(text, res)
    return found.crisis and found.layer == "model" and found.crisis_kind == "medical_emergency"


def read_alone(user_messages: list[str], res: Screens) -> list[Assessment]:
    """The screen's readings of the conversation's last few user messages, each alone, oldest first."""
    return [assess(t, res) for t in user_messages[-HISTORY_TURNS:]]


def crisis_earlier(user_messages: list[str], res: Screens) -> list[str]:
    """The crisis evidence in the conversation's last few user messages (oldest first), if any:
    an answer given this soon after a crisis must still respond to it."""
    return [s for found in read_alone(user_messages, res) if found.crisis for s in found.evidence]
