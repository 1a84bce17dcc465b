"""Which reader a message gets: is it English, and if not, which of the other languages. Two small
classifiers over character n-grams of the message as written, trained on the screen's own
messages (a general-purpose language identifier reads English slang, "i wanna die so bad rn", as
another language; a word list reads short messages in other languages as English); the script
and the length decide first where they can."""

from __future__ import annotations

import re
from typing import Any

import numpy as np

from app.core.learning.logistic import Linear, predict_proba
from app.core.spelling import is_english_word
from app.core.text import words
from screening.screen_features import tfidf

_LETTER = re.compile(r"[^\W\d_]")
_PUNCTUATION = ".,;:!?\"'()"


def too_short_to_judge(message: str) -> bool | None:
    """English or not when the script or the length decides: mostly non-Latin letters are not
    English; numbers or emoji alone, and fewer than three words ("ok", "clozapine?", "Hej!"), are
    read as English (retrieval or small talk copes, and the identifier cannot tell); else None."""
    letters = _LETTER.findall(message)
    if not letters:
        return True
    if sum(c.isascii() for c in letters) / len(letters) < 0.5:
        return False
    return True if len(words(message)) < 3 else None


def is_english(language_id: dict[str, Any], message: str) -> bool:
    """Whether a message is English, as written, by the fitted identifier `language_id`."""
    if (judged := too_short_to_judge(message)) is not None:
        return judged
    if english_probability(language_id, [message])[0] >= language_id["threshold"]:
        return True
    # One misspelt word can tip a short English message over ("is it same as skitzofrenia":
    # other languages spell the illness that way): read it again without the words English
    # has never seen. A message in another language still reads as that language.
    written = message.split()
    seen = [w for w in written if is_english_word(w.strip(_PUNCTUATION))]
    if len(seen) < 3 or len(seen) == len(written):
        return False
    return bool(english_probability(language_id, [" ".join(seen)])[0] >= language_id["threshold"])


def english_probability(fitted: dict[str, Any], messages: list[str]) -> np.ndarray:
    classifier: Linear = fitted["classifier"]
    column = [str(c) for c in classifier.classes_].index("en")
    return predict_proba(classifier, tfidf(fitted["vectoriser"], messages))[:, column]


def likeliest_language(fitted: dict[str, Any], messages: list[str]) -> list[str]:
    classifier: Linear = fitted["classifier"]
    p = predict_proba(classifier, tfidf(fitted["vectoriser"], messages))
    return [str(classifier.classes_[i]) for i in np.argmax(p, axis=1)]
