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
the word as typed: of the words close by letters, the nearest by how people mistype (a neighbouring
key, two letters swapped or a letter doubled is a smaller slip than any other: "momth" is "month",
not "moth"), the commoner of equally near ones ("thnks" is "thanks", not "thinks").
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

from app.core.medicines import is_medicine_name, with_international_names

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
# A keyboard's letters and their neighbours (same row and the rows above and below, as fingers
# slip): a slip to a neighbour, two letters swapped or a letter doubled costs SMALL_SLIP, any other
# change of a letter 1.
KEYBOARD_ROWS = ("qwertyuiop", "asdfghjkl", "zxcvbnm")
_POSITION = {key: (row, column + row * 0.5) for row, keys in enumerate(KEYBOARD_ROWS) for column, key in enumerate(keys)}
SMALL_SLIP = 0.5
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


def is_everyday_word(word: str) -> bool:
    """Whether English uses `word` at least OWN_WORD often: "children" yes, "neutropenia" and
    "Trinza" no."""
    return _used(word.lower()) >= OWN_WORD


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
            if not found and len(lower) >= LONG_WORD and not is_english_word(lower) and not is_medicine_name(lower):
                found = process.extractOne(lower, [w for w in candidates if len(w) >= LONG_WORD],
                                           scorer=fuzz.ratio, score_cutoff=LONG_CUTOFF * 100)
            if len(self._memo) > 50_000:
                self._memo.clear()
            self._memo[lower] = found[0] if found else lower
        return self._memo[lower] if self._memo[lower] != lower else word

    def _likeliest(self, word: str, candidates: list[str]) -> tuple[str, float] | None:
        """Of the candidates close by letters that English uses far more often than `word`, the one
        a slip of typing most likely made `word` from; the commoner of equals."""
        floor = _used(word) + MORE_OFTEN if _used(word) > 0 else 0.0
        found = [(c, score) for c, score, _ in process.extract(
            word, candidates, scorer=fuzz.ratio, score_cutoff=self.cutoff * 100, limit=None) if _used(c) >= floor]
        return min(found, key=lambda f: (typing_distance(f[0], word), -_used(f[0])), default=None)

    def correct(self, text: str) -> str:
        return _WORD.sub(lambda m: self.correct_word(m.group(0)), with_international_names(text))


def _neighbours(a: str, b: str) -> bool:
    if a not in _POSITION or b not in _POSITION:
        return False
    (row_a, x_a), (row_b, x_b) = _POSITION[a], _POSITION[b]
    return abs(row_a - row_b) <= 1 and abs(x_a - x_b) <= 1 and a != b


def typing_distance(meant: str, typed: str) -> float:
    """How far `typed` is from `meant` by slips of typing: an edit distance (letters added, lost,
    changed, two neighbours swapped) in which a neighbouring key, a swap and a doubled or undoubled
    letter cost SMALL_SLIP and any other edit 1."""
    m, n = len(meant), len(typed)
    d = [[0.0] * (n + 1) for _ in range(m + 1)]
    for i in range(1, m + 1):
        d[i][0] = d[i - 1][0] + (SMALL_SLIP if i > 1 and meant[i - 1] == meant[i - 2] else 1.0)
    for j in range(1, n + 1):
        d[0][j] = d[0][j - 1] + (SMALL_SLIP if j > 1 and typed[j - 1] == typed[j - 2] else 1.0)
    for i in range(1, m + 1):
        for j in range(1, n + 1):
            a, b = meant[i - 1], typed[j - 1]
            lost = SMALL_SLIP if i > 1 and a == meant[i - 2] else 1.0  # "tommorow" meant, "tomorow" typed
            added = SMALL_SLIP if j > 1 and b == typed[j - 2] else 1.0  # a key held down
            changed = 0.0 if a == b else SMALL_SLIP if _neighbours(a, b) else 1.0
            d[i][j] = min(d[i - 1][j] + lost, d[i][j - 1] + added, d[i - 1][j - 1] + changed)
            if i > 1 and j > 1 and a == typed[j - 2] and meant[i - 2] == b:
                d[i][j] = min(d[i][j], d[i - 2][j - 2] + SMALL_SLIP)
    return d[m][n]


def corpus_words(texts: Iterable[str]) -> set[str]:
    return {w.lower() for text in texts for w in _WORD.findall(text)}
