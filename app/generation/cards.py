"""A vetted answer card as the answer to one question: the sentence that answers it leads.

A card often serves several questions ("is relapse more likely after the birth?", "can you
breastfeed on antipsychotics?"). Each of its sentences is vetted and cited on its own, so the one
closest to what was asked may come first, as in a composed answer; the rest keep their order.
"""

from __future__ import annotations

import numpy as np

from app.core.text import split_sentences, strip_citations
from app.generation.likeness import Embed
from app.generation.passages import leaning_run, leans_back, names_again

LEAD_MARGIN = 0.1  # how much closer to the question a later sentence must be to lead


def led_by_answer(body: str, question: str, embed: Embed) -> str:
    """`body` with the sentence closest to `question` first, if it is clearly closer than the
    card's own first sentence and does not lean on the one before it ("It can…"); the sentences
    that lean on it go with it ("NMS is… If these happen, get urgent help"), or they would read as
    said of what comes before them in its place."""
    sentences = split_sentences(body)
    if len(sentences) < 2 or not question.strip():
        return body
    vectors = embed([strip_citations(s) for s in sentences])
    similarity = vectors @ embed([question])[0]
    best = int(np.argmax(similarity))
    while best > 0 and names_again(strip_citations(sentences[best]), sentences[best - 1]):
        best -= 1  # what it names again leads, and it follows
    if best == 0 or similarity[best] - similarity[0] < LEAD_MARGIN or leans_back(sentences[best]):
        return body
    end = leaning_run(sentences, best)
    return " ".join([*sentences[best:end], *sentences[:best], *sentences[end:]])
