"""Is an LLM judge's verdict usable? A verdict that parses can still be nonsense: a reason that is
empty or repeats the answer format's own wording (small models echo the schema), or a flag that
quotes nothing from what it judged. Such a verdict counts as malformed: the judge failed, which
escalates and, at the top tier, fails closed."""

from __future__ import annotations

from rapidfuzz import fuzz

from app.core.text import words
from judges.schema import DraftContext, JudgeVerdict

# The answer format's own words, as the judge sees them: the schema's field descriptions and names.
_FORMAT_TEXTS = [field.description or "" for field in JudgeVerdict.model_fields.values()] + [
    "pass warn reject", "verdict rule offending reason suggested_fix", "the verdict tool",
]
_ECHO_SIMILARITY = 85  # rapidfuzz's 0-100 scale
_QUOTE_SIMILARITY = 90


def _normal(text: str) -> str:
    return " ".join(words(text))


def echoes_format(reason: str) -> bool:
    reason = _normal(reason)
    return any(fuzz.ratio(reason, _normal(text)) >= _ECHO_SIMILARITY
               or (len(reason) >= 12 and fuzz.partial_ratio(reason, _normal(text)) >= 95
                   and len(reason) <= len(_normal(text)))
               for text in _FORMAT_TEXTS if text)


def quoted_in(quote: str, text: str) -> bool:
    """Is `quote` (nearly) a passage of `text`? Judges re-type quotes, so allow small slips."""
    quote, text = _normal(quote), _normal(text)
    return len(quote) >= 3 and fuzz.partial_ratio(quote, text) >= _QUOTE_SIMILARITY


def problem_with(verdict: JudgeVerdict, ctx: DraftContext) -> str | None:
    """Why this verdict cannot be trusted, or None when it can."""
    if not words(verdict.reason):
        return "the verdict gives no reason"
    if echoes_format(verdict.reason):
        return "the reason repeats the answer format instead of judging the draft"
    if verdict.verdict != "pass":
        judged = " ".join(t for t in (ctx.draft, ctx.user) if t)
        if not any(quoted_in(q, judged) for q in verdict.offending):
            return f"the {verdict.verdict} verdict quotes nothing from the draft"
    return None
