"""Reading a message with the conversation: "is it safe with alcohol?" after a question about
clozapine asks about clozapine; "and the other one?" asks about the medicine named before it, "the
second one" about the second named; "do they go away?" after "what are negative symptoms?" asks
about negative symptoms.

Offline and rule-based on purpose: medicine names are recognised by their international
non-proprietary name stems (app.core.medicines), and a reference is resolved only to a medicine
the user named in the topic the conversation is on, or to what the topic asked the meaning of.
"""

from __future__ import annotations

import re

from app.core.medicines import names_a_medicine, names_in

_NOUN = r"(?:one|medicine|medication|med|drug|tablet|pill|injection)"
_OTHER = re.compile(rf"\bthe other(?: {_NOUN}s?)?\b", re.IGNORECASE)
# "the second one", "the latter": the medicines of the topic in the order they were named.
_ORDINAL = re.compile(rf"\bthe (first|second|third|last|former|latter)(?: {_NOUN}s?\b|(?!\s*\w))", re.IGNORECASE)
_POSITION = {"first": 0, "former": 0, "second": 1, "third": 2, "last": -1, "latter": -1}
_THAT = re.compile(rf"\b(?:that|this|the same) {_NOUN}\b", re.IGNORECASE)
# "it" that stands for something said before; not the "it" of "is it normal to…", "it seems
# that…", nor the situational "it" of "is it my fault?", "is it a relapse?". A clause ends at
# "and" or "but": the "it" of "he's on it and wants to stop" ends its own.
_SITUATION = r"(?!\s+(?:my|your|his|her|our|their|a|an|the|me|just|all|really)\b)"
_IT = re.compile(r"\bit\b(?!\s+(?:(?!(?:and|but|or|so|because)\b)\w+\s+){0,2}(?:to|that|if|when|whether)\b)"
                 + _SITUATION, re.IGNORECASE)
# A message that leans on something said before; the situational "it" of "is it our fault?" does not.
# So do "mine" ("how do I work out mine?" after a relapse signature) and "the movement one".
_BACK = re.compile(r"\bit\b" + _SITUATION + r"|\b(?:that|this|they|them|those|these|the other|same)\b|"
                   r"\b(?:mine|yours|ours|theirs)\b|\bthe \w+ one\b|" + _ORDINAL.pattern, re.IGNORECASE)


def named_medicines(messages: list[str], *, latest_last: bool = True) -> list[str]:
    """Medicines named in `messages`, each once, most recently named last (or, `latest_last`
    false, in the order they were first named: "the second one")."""
    order: dict[str, None] = {}
    for message in messages:
        for name in names_in(message):
            if latest_last:
                order.pop(name, None)
            order.setdefault(name, None)
    return list(order)


def about_another_medicine(title: str, question: str) -> bool:
    """A source titled after a medicine the question does not name, while the question names
    one: the clozapine source's side effects are not olanzapine's."""
    asked, about = set(named_medicines([question])), set(named_medicines([title]))
    return bool(asked and about and not asked & about)


# Words after which "that" may still stand for something ("is that normal?", "what about that
# one?", "and that worries me"); after any other word, and followed by more words, it joins a
# clause to it instead ("two other meds that didn't work", "he says that he hears them").
_BEFORE_A_REFERENCE_TEXT = """
is are was were be been am isn't aren't wasn't do does did doing done don't doesn't didn't can could
will would should may might must can't won't has have had about with like of on for to from in at by
after before than and but or so if because what how why when where not just all also ok okay then oh
yes no even only
"""
_BEFORE_A_REFERENCE = frozenset(_BEFORE_A_REFERENCE_TEXT.split())
_WORD = re.compile(r"[\w'’]+")


def _first_reference(text: str) -> re.Match[str] | None:
    """The first word of the message that leans on something said before."""
    for match in _BACK.finditer(text):
        if match.group(0).lower() == "that":
            before = _WORD.findall(text[:match.start()])
            if before and before[-1].lower() not in _BEFORE_A_REFERENCE and re.match(r"\s+\w", text[match.end():]):
                continue  # a clause joined to the word before it
        return match
    return None


def refers_back(text: str) -> bool:
    """The message leans on something said before ("is that normal?", "what about them?")."""
    return _first_reference(text) is not None


# A phrase still open before the reference ("side effects of", "how much of"): the reference
# completes it, so what the phrase names is what is asked about, not what "it" stands for.
_OPEN_PHRASE = re.compile(r"\b(?:of|about|for|with|on|from|to|in|at|into|off)\s*$", re.IGNORECASE)
CLAUSE_END = re.compile(r"[,.;:?!]|\b(?:and|but|so)\b", re.IGNORECASE)


def before_reference(text: str) -> str:
    """What the message says before its first reference word that could be what it stands for
    ("my brother has schizophrenia, does" of "… does that mean I'll get it too?"): if that names a
    topic, the reference may point back into the message itself, not to the conversation. A phrase
    the reference completes is not such a thing: "side effects of it?" says nothing before "it"
    that "it" could be; "my son has schizophrenia, what are the chances of it" says "my son has
    schizophrenia"."""
    match = _first_reference(text)
    lead = text[:match.start()] if match else text
    if match and _OPEN_PHRASE.search(lead):
        ends = list(CLAUSE_END.finditer(lead))
        lead = lead[:ends[-1].start()] if ends else ""
    return lead


def resolve(text: str, topic: list[str]) -> str:
    """`text` with a reference to a medicine of the conversation's current `topic` (its opening
    question and latest follow-up, as read) replaced by its name; unchanged when it names a
    medicine itself, refers to none, or the topic names none: after "what is clozapine?" and then
    "how are depot injections given?", "does it hurt?" is about the injection, not clozapine."""
    if names_a_medicine(text):
        return text
    named = named_medicines(topic)
    if not named:
        return text
    if (match := _OTHER.search(text)) and len(named) >= 2:
        return text[:match.start()] + named[-2] + text[match.end():]
    in_order = named_medicines(topic, latest_last=False)
    if (match := _ORDINAL.search(text)) and len(in_order) >= 2:
        position = _POSITION[match.group(1).lower()]
        if position < len(in_order):
            return text[:match.start()] + in_order[position] + text[match.end():]
    for pattern in (_THAT, _IT):
        if match := pattern.search(text):
            return text[:match.start()] + named[-1] + text[match.end():]
    return text


# What a question that asks what something is names: "what are negative symptoms?" (which "they"
# stands for after it), "whats a depot", "what does 'psychosis' mean?", "tell me about family
# intervention" (which "it" stands for).
_QUOTE = "['\"‘“’”]?"
_DEFINITION = re.compile(
    r"^\s*(?:(?:so|and|ok|okay|hi|hey)\W+)?(?:(?P<are>what\s+are)|what\s+is|what(?:'s|’s|s)|what\s+does"
    r"|tell\s+me\s+about|explain)\s+(?:(?:a|an|the)\s+)?" + _QUOTE + r"(?P<subject>[a-z][a-z' -]{2,40}?)" + _QUOTE
    + r"(?:\s+(?:mean|means|do|stand for))?\s*[?.!]*\s*$", re.IGNORECASE)
_NOT_A_SUBJECT = re.compile(r"^(?:it|that|this|they|them|those|these|you|i|he|she|we)$", re.IGNORECASE)
_THEY = re.compile(r"\b(?:they|them)\b", re.IGNORECASE)
# "one" standing for a thing ("what do you put in one?", "how do I get one for him"), not the
# number or "someone": it ends the clause or comes before a preposition, after no other determiner.
_ONE = re.compile(r"(?<!\bwhich )(?<!\bother )(?<!\beach )(?<!\bevery )(?<!\bno )\bone\b"
                  r"(?=\s*(?:[?.!,;]|$|\b(?:for|from|with|near|in|at|on|to|if|or|too|yet|now|please)\b))",
                  re.IGNORECASE)


def subject_of(question: str) -> tuple[str, bool]:
    """What a question asking what something is names ("negative symptoms"; "" if it asks
    nothing of the kind), and whether it was asked of as many ("what are …")."""
    match = _DEFINITION.match(question)
    if match is None or _NOT_A_SUBJECT.match(match.group("subject").strip()):
        return "", False
    return match.group("subject").strip(), match.group("are") is not None


def with_subject(text: str, topic: list[str]) -> str:
    """"do they go away once the voices stop?" after "what are negative symptoms?": "they" is
    what the conversation's topic asked about, if it asked what something is ("they" for what was
    asked of as many, "it" or "one" for one: "what goes in one?" after "what is a crisis plan?").
    Unlike a medicine's name (`resolve`), the subject does not make the message stand alone: it is
    still read with the topic ("how long does cognitive remediation take" alone is nearer how long
    antipsychotics take to work)."""
    subject, many = next((found for said in reversed(topic) if (found := subject_of(said))[0]), ("", False))
    if not subject or names_a_medicine(subject) or names_a_medicine(text):
        return text  # medicines are `resolve`'s
    if (match := _THEY.search(text) if many else (_IT.search(text) or _ONE.search(text))) is None:
        return text
    if match.group(0).lower() == "one":
        subject = ("an " if subject[0].lower() in "aeiou" else "a ") + subject
    return text[:match.start()] + subject + text[match.end():]
