"""Correct misspelt words against the knowledge base's own vocabulary.

"skitzophrenia" or "olanzipine" find nothing in BM25 and little in the embedding; "myslef" hides
a crisis from a pattern. A word is corrected only when it is unknown (not in the vocabulary or
the known-word list, so real words such as "weather" are left alone) and a vocabulary word of
similar length, starting with the same letter, is close enough (rapidfuzz's normalised
similarity). Candidates are bucketed by first letter, which keeps a look-up well under a
millisecond. A word spelt as it sounds ("injecshun", "medikashun") is too far from its letters
for that; with `phonetic`, a word that is no English word at all (wordfreq has never seen it) is
read as the vocabulary word that sounds the same (jellyfish's Metaphone code) and shares half its
letters. Metaphone alone is too coarse for real words ("fortnight" sounds like "frightened"). A
long word English has never seen may be further from its letters (see LONG_WORD).
With `informal`, texting forms the knowledge base never uses are first written out
(the `contractions` package: "gonna" -> "going to", "dont" -> "do not", "idk" -> "I do not know"):
left as they are, they read as words the knowledge base lacks, and "is she gonna be violent" looked
like a question it does not cover. Words the knowledge base uses are never rewritten ("cause").
With `english`, the speller reads as a person would, not only in the knowledge base's words: the
commonest English words join the vocabulary, a word English uses often enough is a word of its own
("halving" is not "having"), and a word is corrected only to one English uses far more often than
the word as typed, the likeliest among equally close ones ("thnks" is "thanks", not "thinks").
Retrieval corrects against the knowledge base's words (phonetically and informally too); the input
screen's learned layer reads English (`english`, texting forms as typed: it learned them so); the
crisis patterns their own short list of risk words.
"""

from __future__ import annotations

import re
from collections import defaultdict
from collections.abc import Iterable
from functools import cache

import contractions
import jellyfish
from rapidfuzz import fuzz, process
from wordfreq import top_n_list, zipf_frequency

from app.core.medicines import MEDICINE

_WORD = re.compile(r"[A-Za-z]+")
MIN_SOUND = 4  # a shorter Metaphone code ("TP": depot, type, tip) says too little to go by
SOUNDS_CUTOFF = 0.5  # a word that sounds the same must still share this much of its letters
# A long word that English has never seen is a misspelling more often than a word of its own, and
# long words are far apart ("skitzofrenia" is 0.72 from "schizophrenia", 0.42 from anything else):
# it may be read as a long vocabulary word this close. Never a medicine's name (one the knowledge
# base does not name is not one it does).
LONG_WORD = 10
LONG_CUTOFF = 0.7
# English (`english`): the vocabulary's commonest words; a word used at least OWN_WORD often (Zipf
# scale: 2.5 is about 3 in 10 million words) is left alone; a correction must be used at least
# MORE_OFTEN more often than the word as typed (3: a thousand times), unless English never used it.
ENGLISH_WORDS = 50_000
OWN_WORD = 2.5
MORE_OFTEN = 3.0
# Texting forms the `contractions` package leaves alone, as patients and carers type them. "hes"
# is the commonest ("hes put on loads of weight" found no source; "he's" found the right one).
# Only forms with one reading here: not "ill" (i'll), "its", "were", "well", "probs" (problems?).
_TEXTING = {
    "hes": "he is", "pls": "please", "plz": "please", "coz": "because", "cos": "because", "cuz": "because",
    "bcos": "because", "becuz": "because", "thru": "through", "wat": "what", "wot": "what", "shud": "should",
    "wud": "would", "cud": "could", "nite": "night", "bf": "boyfriend", "gf": "girlfriend", "dr": "doctor",
    "drs": "doctors", "appt": "appointment", "hosp": "hospital",
}


@cache
def written_out(word: str) -> str:
    """A texting form or a contraction without its apostrophe, written out ("wont" -> "will not");
    any other word as it is."""
    return _TEXTING.get(word) or contractions.fix(word, leftovers=False, slang=True)


@cache
def _english_words() -> tuple[str, ...]:
    return tuple(w for w in top_n_list("en", ENGLISH_WORDS) if w.isalpha())


@cache
def _used(word: str) -> float:
    return zipf_frequency(word, "en")


def is_english_word(word: str) -> bool:
    """Whether English text has ever used `word` (wordfreq): "injecshun" and "skitzofrenia" no."""
    return zipf_frequency(word.lower(), "en") > 0


class Speller:
    def __init__(self, corpus_words: Iterable[str], known_words: Iterable[str] = (),
                 cutoff: float = 0.8, min_length: int = 4, phonetic: bool = False, informal: bool = False,
                 english: bool = False):
        self.vocabulary = {w.lower() for w in corpus_words} | (set(_english_words()) if english else set())
        self.known = {w.lower() for w in known_words} | self.vocabulary
        self.cutoff, self.min_length, self.informal, self.english = cutoff, min_length, informal, english
        self._buckets: dict[str, list[str]] = defaultdict(list)
        self._sounds: dict[str, list[str]] = defaultdict(list)  # by Metaphone code, if `phonetic`
        for word in sorted(self.vocabulary):
            if len(word) < min_length:
                continue
            self._buckets[word[0]].append(word)
            if phonetic and len(code := jellyfish.metaphone(word)) >= MIN_SOUND:
                self._sounds[code].append(word)
        self._memo: dict[str, str] = {}

    def correct_word(self, word: str) -> str:
        lower = word.lower()
        if self.informal and lower not in self.vocabulary and (full := written_out(lower)) != lower:
            return full
        if len(lower) < self.min_length or lower in self.known or (self.english and _used(lower) >= OWN_WORD):
            return word
        if lower not in self._memo:
            candidates = [w for w in self._buckets.get(lower[0], ()) if abs(len(w) - len(lower)) <= 2]
            found = self._likeliest(lower, candidates) if self.english else \
                process.extractOne(lower, candidates, scorer=fuzz.ratio, score_cutoff=self.cutoff * 100)
            if not found and self._sounds and not is_english_word(lower):
                found = process.extractOne(lower, self._sounds.get(jellyfish.metaphone(lower), ()),
                                           scorer=fuzz.ratio, score_cutoff=SOUNDS_CUTOFF * 100)
            if not found and len(lower) >= LONG_WORD and not is_english_word(lower) and not MEDICINE.fullmatch(lower):
                found = process.extractOne(lower, [w for w in candidates if len(w) >= LONG_WORD],
                                           scorer=fuzz.ratio, score_cutoff=LONG_CUTOFF * 100)
            if len(self._memo) > 50_000:
                self._memo.clear()
            self._memo[lower] = found[0] if found else lower
        return self._memo[lower] if self._memo[lower] != lower else word

    def _likeliest(self, word: str, candidates: list[str]) -> tuple[str, float] | None:
        """The closest candidate English uses far more often than `word`; the commoner of equals."""
        floor = _used(word) + MORE_OFTEN if _used(word) > 0 else 0.0
        found = [(c, score) for c, score, _ in process.extract(
            word, candidates, scorer=fuzz.ratio, score_cutoff=self.cutoff * 100, limit=None) if _used(c) >= floor]
        return max(found, key=lambda f: (f[1], _used(f[0])), default=None)

    def correct(self, text: str) -> str:
        return _WORD.sub(lambda m: self.correct_word(m.group(0)), text)


def corpus_words(texts: Iterable[str]) -> set[str]:
    return {w.lower() for text in texts for w in _WORD.findall(text)}
