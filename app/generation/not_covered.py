"""What the bot says when nothing covers a message: "not covered" with who can help, or, to
someone who only told us something, the questions they could ask; the questions on offer; what a
general answer says first of a medicine no source speaks of; and what it says when no draft passed
the filter."""

from __future__ import annotations

from collections.abc import Callable, Collection, Iterable, Sequence

from app.core.medicines import medicines_named
from app.core.profile import Profile
from app.prompts import reply, topics_list

# How sure retrieval must be of a source, however short of covering a message, to offer its
# question to someone who asked nothing (below it the ranking is noise: "my dad has it").
RELATED_FROM = 0.02

Score = Callable[[list[str]], list[list[tuple[str, float]]]]


def not_covered(message: str, *, urgent: bool, asks: bool, topic_titles: Sequence[str], asked: Collection[str],
                answers_before: Iterable[str], score: Score, headlines: dict[str, str], all_titles: Sequence[str],
                profile: Profile) -> str:
    """"Not covered", with who can help. In a conversation, about what it is about
    (`topic_titles`: "is it permanent?" after NMS: what we have on side effects does not say);
    otherwise with the topics we cover (`all_titles`), listed in full once per conversation.
    Someone who only told us something ("my sister got diagnosed yesterday") asked nothing we
    failed to cover: they hear what they could ask, nearest what they said first."""
    if topic_titles:
        return reply("no_match_in_topic", titles=" and ".join(f'"{title}"' for title in topic_titles[:2]))
    if not urgent and not asks:
        examples = questions_near(message, asked, score, headlines)
        return reply("statement_not_covered", profile, examples="\n".join(f"- {q}" for q in examples))
    listed = reply("no_match", topics=topics_list(list(all_titles)))
    if any(listed in answer for answer in answers_before):
        return reply("no_match_again")
    return listed


def medicine_notice(text: str, covered: Collection[str]) -> str | None:
    """"what are the side effects of lithium?" where no source speaks of lithium: the general
    answer says so first, not sentences about other medicines as if they were about it."""
    uncovered = sorted(medicines_named(text) - set(covered))
    return reply("medicine_not_covered", medicines=" and ".join(uncovered)) if uncovered else None


def questions_near(text: str, asked: Collection[str], score: Score, headlines: dict[str, str],
                   count: int = 3) -> list[str]:
    """Up to `count` headline questions (each source's first) not yet asked: of the sources
    retrieval ranks nearest `text`, however unsure, then the knowledge base's core topics."""
    near = [sid for sid, confidence in score([text])[0] if confidence >= RELATED_FROM and sid in headlines]
    questions = [headlines[sid] for sid in dict.fromkeys([*near, *headlines])]
    return [q for q in questions if q.lower() not in asked][:count]


def headline_questions(knowledge_base: Iterable) -> dict[str, str]:
    """Each source's headline question (the first of its `questions:`), in the knowledge base's
    order: the examples small talk and a statement nothing covers offer."""
    return {source.id: source.questions[0] for source in knowledge_base if source.questions}


def withheld(given_titles: Sequence[str], all_titles: Sequence[str]) -> str:
    """When no draft passed the filter: what the bot cannot answer here, where the topic is covered
    (the sources it was given, else every topic), and who to ask."""
    return reply("withheld", topics="; ".join(given_titles) or topics_list(list(all_titles)))
