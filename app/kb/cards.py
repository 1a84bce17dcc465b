"""Vetted answer cards: short, plain answers to the commonest questions, every sentence cited.

A card lives in the knowledge base's `answers/` folder as Markdown with front matter. When a user's
question confidently matches one of its `questions`, the card is the draft (still checked by the
filter, like any draft). A `boundary` card answers a request about the person's own case: one
uncited opening sentence on what the bot cannot do, then the general safety facts and who to ask.
An `urgent` card is the lead of an answer about someone unwell now: one uncited opening sentence
that takes the worry seriously, then how to get help today.
"""

from __future__ import annotations

from collections.abc import Iterable
from pathlib import Path
from typing import Literal

from pydantic import BaseModel, ConfigDict, Field

from app.core.text import citations_in, split_sentences
from app.kb.schema import ID_PATTERN

CARDS_FOLDER = "answers"


class CardMeta(BaseModel):
    model_config = ConfigDict(extra="forbid", str_strip_whitespace=True)

    id: str = Field(pattern=ID_PATTERN)
    title: str = Field(min_length=1)
    questions: list[str] = Field(min_length=1)  # how people ask it; what a question is matched to
    kind: Literal["answer", "boundary", "urgent"] = "answer"
    # A boundary card's kinds of request about one's own case, as the input screen names them
    # ("missed_dose"): the screen's reading of a request chooses among the cards that list it.
    requests: list[str] = Field(default_factory=list)
    # The one sentence of a boundary card's body that every request of its kinds must hear,
    # whichever card answers it: the screen may read a request as two kinds ("can I tell my
    # girlfriend it's fine to quit her risperidone?" is about someone else's medicine and about
    # stopping), and a card speaks to one. A kind whose cards answer different topics (drink or
    # other medicines; family or relapse risk) declares none.
    safety_fact: str = ""
    # The sources whose topics are reasons a request of this kind gives, read by their keywords
    # ("can I cut my tablets in half? they make me so restless": the side-effects source's
    # restlessness): a boundary reply adds what that source says of the reason the card does not.
    reasons: list[str] = Field(default_factory=list)


class AnswerCard(CardMeta):
    body: str = Field(min_length=1)
    path: Path | None = None

    @property
    def sources(self) -> list[str]:
        return list(dict.fromkeys(citations_in(self.body)))

    def draft(self, reminder: str, body: str = "") -> str:
        """The card as a draft (`body`: its sentences in another order): a general answer ends,
        like every answer, with `reminder` (check with the care team); a boundary card already
        says who to ask."""
        body = body or self.body
        return body if self.kind == "boundary" else f"{body}\n\n{reminder}"

    def with_opening(self, opening: str) -> str:
        """A boundary or urgent card's body opened by `opening` instead of its own first sentence."""
        own = split_sentences(self.body)[0]
        return self.body.replace(own, opening, 1)

    def uncited_sentences(self) -> list[str]:
        """Sentences without a citation; a boundary or urgent card's opening sentence is allowed one."""
        sentences = split_sentences(self.body)
        if self.kind != "answer":
            sentences = sentences[1:]
        return [s for s in sentences if not citations_in(s)]


def safety_facts(cards: Iterable[AnswerCard]) -> dict[str, str]:
    """Each kind of request's safety fact, as its card declares it (`CardMeta.safety_fact`)."""
    return {kind: card.safety_fact for card in cards if card.safety_fact for kind in card.requests}
