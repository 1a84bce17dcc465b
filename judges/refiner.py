"""The refiner: rewrites a rejected draft to meet the judges' criticism."""

from __future__ import annotations

from langchain_core.messages import HumanMessage, SystemMessage

from app.core.models import Deadline, RoleClient, call_text
from app.core.records import Judgement, ModelCall
from judges.cascade import _template, judged_material
from judges.rules import load_rules
from judges.schema import DraftContext


def criticism(judgements: list[Judgement]) -> str:
    lines = []
    for j in judgements:
        quoted = "; ".join(f'"{s}"' for s in j.offending[:3])
        fix = f" Fix: {j.suggested_fix}" if j.suggested_fix else ""
        lines.append(f"- {j.judge} ({j.rule or 'rule'}): {j.reason or j.verdict}. {quoted}{fix}".strip())
    return "\n".join(lines)


def refine(client: RoleClient, ctx: DraftContext, judgements: list[Judgement],
           deadline: Deadline | None = None) -> tuple[str, ModelCall]:
    """Raises ModelError when the refiner fails; the filter then falls back."""
    system = _template("refiner.md").format(
        rules=load_rules().as_prompt(example_id=ctx.sources[0].id if ctx.sources else "S1"))
    request = f"{judged_material(ctx)}\n\nThe reviewers' criticism:\n{criticism(judgements)}"
    return call_text(client, [SystemMessage(system), HumanMessage(request)], purpose="refine",
                     deadline=deadline)
