"""AI pre-rating: the judge model scores each item on the same rubric the raters use. Ratings are
stored apart from human scores, under the model's name, and only ever compared with them."""

from __future__ import annotations

from collections.abc import Callable

from langchain_core.messages import HumanMessage, SystemMessage
from pydantic import BaseModel, Field

from app.core.errors import ModelError
from app.core.models import RoleClient, call_structured
from app.core.rubric import Rubric
from app.prompts import template
from app.store import AiRating, CriterionRating, Item, ScoreStore


class CriterionCall(BaseModel):
    id: str = Field(description="the criterion id, exactly as given")
    met: bool
    reason: str = Field(description="one sentence naming what decided it")


class RubricRating(BaseModel):
    """The rating of one answer: every criterion of the rubric, met or not, with a reason."""

    criteria: list[CriterionCall]


def rating_messages(rubric: Rubric, item: Item) -> list:
    criteria = "\n".join(f"- {c.id}: {c.title}. {' '.join(c.guidance.split())}" for c in rubric.criteria)
    system = template("prerate").format(instructions=" ".join(rubric.instructions.split()), criteria=criteria)
    material = template("prerate_item").format(
        context="\n".join(f"user: {e.user}\nassistant: {e.assistant}" for e in item.context[-6:]) or "(none)",
        question=item.question, answer=item.answer,
        sources="\n\n".join(f"[{s.id}] {s.title}\n{s.text}" for s in item.sources) or "(none cited)")
    return [SystemMessage(system), HumanMessage(material)]


def rate(client: RoleClient, rubric: Rubric, item: Item) -> AiRating:
    """One item. Raises ModelError if the call fails or the rating leaves a criterion out."""
    answer, _call = call_structured(client, RubricRating, rating_messages(rubric, item), purpose="prerate")
    given = {c.id: c for c in answer.criteria}
    missing = [c.id for c in rubric.criteria if c.id not in given]
    if missing:
        raise ModelError(client.role, client.model_name, f"malformed rating: no verdict on {', '.join(missing)}")
    criteria = {c.id: CriterionRating(met=given[c.id].met, reason=given[c.id].reason) for c in rubric.criteria}
    return AiRating(item_id=item.item_id, model=client.model_name,
                    score=sum(c.met for c in criteria.values()), criteria=criteria)


def prerate(store: ScoreStore, client: RoleClient, rubric: Rubric, collection: str, *, again: bool = False,
            on_item: Callable[[Item, AiRating | None, str], None] | None = None) -> tuple[int, int]:
    """Rate every item of the collection not yet rated by this model; returns (rated, failed).
    A failed item is reported and left unrated, never guessed."""
    done = set() if again else {r.item_id for r in store.ai_ratings(collection) if r.model == client.model_name}
    rated = failed = 0
    for item in store.items(collection):
        if item.item_id in done:
            continue
        try:
            rating = rate(client, rubric, item)
        except ModelError as error:
            failed += 1
            if on_item:
                on_item(item, None, error.reason)
            continue
        store.save_ai_rating(rating)
        rated += 1
        if on_item:
            on_item(item, rating, "")
    return rated, failed
