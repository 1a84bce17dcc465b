"""Questions as people type them in a hurry, for `cafbot eval answers --typos`: the answer keys'
questions are mostly spelt right, and users' messages often are not.

Each word of five letters or more gets, with probability `rate`, one slip of the kinds phone and
keyboard typing makes: two letters swapped, a letter dropped or doubled, or a neighbouring key hit
instead. The text is lower-cased and loses its apostrophes ("dont", "im"), as such messages do.
The slips depend only on the seed and the text, so a run can be repeated and compared.
"""

from __future__ import annotations

import random
import re

from app.core.spelling import KEYBOARD_ROWS

_LONG_WORD = re.compile(r"[a-z]{5,}")
# Each letter's neighbours on its own row: fewer than the speller allows for (the rows above and
# below too), so the slips are not made to the speller's measure alone.
_NEIGHBOURS = {row[i]: row[max(0, i - 1):i] + row[i + 1:i + 2] for row in KEYBOARD_ROWS for i in range(len(row))}


def with_typos(text: str, rate: float, seed: int | str = 0) -> str:
    """`text` as if typed in a hurry; unchanged when `rate` is 0."""
    if rate <= 0:
        return text
    rng = random.Random(f"{seed}:{text}")
    typed = text.lower().replace("'", "").replace("’", "")
    return _LONG_WORD.sub(lambda m: _slip(m.group(0), rng) if rng.random() < rate else m.group(0), typed)


def _slip(word: str, rng: random.Random) -> str:
    i = rng.randrange(1, len(word) - 1)  # the first and last letters are seldom the ones missed
    kind = rng.choice(("swap", "drop", "double", "neighbour"))
    if kind == "swap":
        return word[:i] + word[i + 1] + word[i] + word[i + 2:]
    if kind == "drop":
        return word[:i] + word[i + 1:]
    if kind == "double":
        return word[:i] + word[i] + word[i:]
    return word[:i] + rng.choice(_NEIGHBOURS[word[i]]) + word[i + 1:]
